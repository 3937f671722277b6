import Hummingbird
import HTTPTypes
import ModgudService

/// What Modgud's few HTML pages share (the magic-link page, the device approval page): the
/// document's opening, which never sends a referrer, and the answer with the page's headers.
enum HTMLPage {
    /// Everything up to and including `<title>`, escaped.
    static func opening(title: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>\(HTMLText.escape(title))</title>
        """
    }

    /// A 200 with the page and its headers.
    static func response(_ html: String, headers pairs: [(String, String)]) -> Response {
        var headers = HTTPFields()
        for (name, value) in pairs { headers[HTTPField.Name(name)!] = value }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }
}

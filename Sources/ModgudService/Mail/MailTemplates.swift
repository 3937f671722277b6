import SMTP

/// The mails the sign-in flows send: plain text and HTML with the realm's display name
/// (HTML-escaped). Pure functions, so tests read exactly what users get.
public enum MailTemplates {
    /// A sign-in code (docs/spec.md section 2), for a new address a registration code, or a code
    /// that confirms a signed-up account's address (issue 14).
    public static func code(_ code: String, to address: String, realmName: String, registration: Bool, confirmation: Bool = false) -> MailMessage {
        let action =
            confirmation
            ? "confirm this address for your \(realmName) account"
            : registration ? "finish creating your \(realmName) account" : "sign in to \(realmName)"
        let text = """
            Your verification code is \(code)

            Enter it in the app to \(action). The code works once and expires in 10 minutes.

            If you did not ask for it, ignore this message: nothing happens without the code.
            """
        let html = """
            <!doctype html><html><body style="font-family:sans-serif">
            <p>Your verification code is</p>
            <p style="font-size:28px;font-weight:bold;letter-spacing:4px">\(code)</p>
            <p>Enter it in the app to \(HTMLText.escape(action)). The code works once and expires in 10 minutes.</p>
            <p style="color:#666">If you did not ask for it, ignore this message: nothing happens without the code.</p>
            </body></html>
            """
        return MailMessage(to: address, subject: "\(realmName) verification code", text: text, html: html)
    }

    /// A magic sign-in link (docs/spec.md section 3).
    public static func magicLink(_ link: String, to address: String, realmName: String) -> MailMessage {
        let text = """
            Sign in to \(realmName) with this link:

            \(link)

            The link works once and expires in 15 minutes. If you did not ask for it, ignore this message.
            """
        let html = """
            <!doctype html><html><body style="font-family:sans-serif">
            <p><a href="\(HTMLText.escape(link))">Sign in to \(HTMLText.escape(realmName))</a></p>
            <p>The link works once and expires in 15 minutes. If you did not ask for it, ignore this message.</p>
            </body></html>
            """
        return MailMessage(to: address, subject: "Sign in to \(realmName)", text: text, html: html)
    }
}

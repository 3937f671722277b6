// libFuzzer harness for the request parsers every endpoint runs first (issue 44): the strict
// form parser (RFC 6749 appendix B, single-valued parameters) and the strict JSON decoder
// (unknown members refused, NUL refused, names matched with or without case). Built by
// `ops/fuzz requests` from FormBody.swift and StrictJSON.swift alone.
//
// Byte 0 picks the parser; the rest is the body.
// Properties beyond "no crash, no hang, no leak": a parsed form holds no NUL and its
// parameters are single-valued unless repeatable; an accepted JSON body is valid JSON to
// Foundation's parser too, and holds no member outside the allowed set.

import Foundation

struct Body: Decodable {
    var Email: String?
    var Code: String?
    var Scopes: [String]?
    var Enabled: Bool?
    var Count: Int?
    static let members: Set<String> = ["Email", "Code", "Scopes", "Enabled", "Count"]
}

func form(_ bytes: [UInt8]) {
    guard let parsed = try? FormBody(bytes) else { return }
    for name in ["grant_type", "client_id", "code", "resource", "scope", "refresh_token"] {
        let values = parsed.all(name)
        if values.count > 1 && !FormBody.repeatable.contains(name) { fatalError("\(name) parsed with \(values.count) values") }
        if let value = parsed[name], value.unicodeScalars.contains("\u{0}") { fatalError("a NUL passed the form parser") }
    }
}

func json(_ bytes: [UInt8], ignoringCase: Bool) {
    guard let body = try? StrictJSON.decode(Body.self, from: bytes, allowed: Body.members, ignoringCase: ignoringCase) else { return }
    guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
        fatalError("StrictJSON accepted what Foundation does not parse as an object")
    }
    let allowed = ignoringCase ? Set(Body.members.map { $0.lowercased() }) : Body.members
    for key in object.keys where !allowed.contains(ignoringCase ? key.lowercased() : key) { fatalError("unknown member \(key) accepted") }
    if let email = body.Email, email.unicodeScalars.contains("\u{0}") { fatalError("a NUL passed the JSON decoder") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequests(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size > 0, let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let body = Array(bytes.dropFirst())
    switch bytes[0] % 3 {
    case 0: form(body)
    case 1: json(body, ignoringCase: false)
    default: json(body, ignoringCase: true)
    }
    return 0
}

import Foundation

/// The receiver's push credential (`delivery.authorization_header`), sealed under the master
/// key with the stream as additional data: it reaches the log and `ssf_streams` only sealed.
enum SignalSecrets {
    static func sealAuthorization(_ header: String, sealer: KeySealer?, realm: String, streamID: String) throws -> String {
        guard let sealer else { throw MasterKeyMissing() }
        return Data(try sealer.seal(Array(header.utf8), realm: realm, kid: "ssf/\(streamID)")).base64EncodedString()
    }

    static func openAuthorization(_ sealed: String, sealer: KeySealer?, realm: String, streamID: String) throws -> String {
        guard let sealer else { throw MasterKeyMissing() }
        let bytes = try sealer.open(Array(Data(base64Encoded: sealed) ?? Data()), realm: realm, kid: "ssf/\(streamID)")
        return String(decoding: bytes, as: UTF8.self)
    }
}

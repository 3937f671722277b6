import Foundation
import XCTest

/// DPoP proofs made by PyJWT (`Tests/Support/make_dpop_proofs.py`), not by our code.
enum DPoPProofMaker {
    /// Proofs for `specs` (each a spec of the script; `alg` ES256, `htm` POST, the given `htu`
    /// and `iat`, and a fresh `jti` unless the spec says otherwise), each with its signing key
    /// as PEM (a later spec's `key_pem` signs with it again).
    static func make(_ specs: [[String: Any]], htu: String, iat: Int) throws -> [(proof: String, jkt: String, key: String)] {
        let filled = specs.enumerated().map { index, spec in
            var spec = spec
            spec["alg"] = spec["alg"] ?? "ES256"
            spec["htm"] = spec["htm"] ?? "POST"
            spec["htu"] = spec["htu"] ?? htu
            spec["iat"] = spec["iat"] ?? iat
            spec["jti"] = spec["jti"] ?? "jti-\(index)-\(UUID().uuidString)"
            return spec
        }
        let output = try PythonScript.run("make_dpop_proofs.py", input: String(decoding: try JSONSerialization.data(withJSONObject: filled), as: UTF8.self))
        let list = try XCTUnwrap((try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [[String: String]], output)
        return list.map { ($0["proof"]!, $0["jkt"]!, $0["key_pem"]!) }
    }
}

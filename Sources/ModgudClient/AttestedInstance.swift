import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an app sends to prove it is the genuine app (issue 47): a Client Attestation JWT from
/// the server's attester, bound to an instance key, and that key to sign each request's PoP.
public protocol ClientAttestationProvider: Sendable {
    /// The current attestation (attesting again when it expires or `renew` asks) and the instance key.
    func attestation(renew: Bool) async throws -> (attestation: String, key: any DPoPSigner)
}

/// An app instance attested by Modgud's attester (docs/guides/genuine-apps.md): it fetches a
/// challenge, has the platform make evidence over SHA-256 of `<challenge>.<thumbprint of the
/// instance key>`, and trades it at `/connect/attestation/…` for a Client Attestation JWT, kept
/// until a minute before it expires. `AttestedInstance.appAttest` makes the evidence with
/// `DCAppAttestService` on Apple platforms; any other maker (an Android bridge, a test
/// authority) plugs in as `evidence`.
public actor AttestedInstance: ClientAttestationProvider {
    /// The platform's evidence, as the attester's endpoints take it.
    public enum Evidence: Sendable {
        /// A new App Attest key's attestation object (`attestKey`).
        case appleAttestation(keyID: Data, attestationObject: Data)
        /// An assertion by an attested App Attest key (`generateAssertion`).
        case appleAssertion(keyID: Data, assertion: Data)
        /// An Android KeyStore key's certificate chain, leaf first.
        case android(chain: [Data])
    }

    /// Makes evidence over a client data hash.
    public typealias EvidenceMaker = @Sendable (_ clientDataHash: Data) async throws -> Evidence

    let issuer: URL
    let clientID: String
    let key: any DPoPSigner
    let urlSession: URLSession
    let evidence: EvidenceMaker
    let now: @Sendable () -> Date
    private var current: (attestation: String, expiresAt: Date)?

    public init(
        issuer: URL, clientID: String, key: any DPoPSigner, urlSession: URLSession = URLSession(configuration: .ephemeral),
        now: @escaping @Sendable () -> Date = { Date() }, evidence: @escaping EvidenceMaker
    ) {
        self.issuer = issuer
        self.clientID = clientID
        self.key = key
        self.urlSession = urlSession
        self.now = now
        self.evidence = evidence
    }

    public func attestation(renew: Bool) async throws -> (attestation: String, key: any DPoPSigner) {
        if !renew, let current, current.expiresAt.timeIntervalSince(now()) > 60 { return (current.attestation, key) }
        let challenge = try await challenge()
        let made = try await evidence(Data(SHA256.hash(data: Data("\(challenge).\(key.thumbprint)".utf8))))
        var body: [String: Any] = ["client_id": clientID, "challenge": challenge, "jwk": key.publicJWK]
        let path: String
        switch made {
        case .appleAttestation(let keyID, let object):
            (path, body["key_id"], body["attestation_object"]) = ("/connect/attestation/apple", keyID.base64EncodedString(), object.base64EncodedString())
        case .appleAssertion(let keyID, let assertion):
            (path, body["key_id"], body["assertion"]) = ("/connect/attestation/apple/assertion", keyID.base64EncodedString(), assertion.base64EncodedString())
        case .android(let chain):
            (path, body["certificate_chain"]) = ("/connect/attestation/android", chain.map { $0.base64EncodedString() })
        }
        let data = try await post(path, body)
        struct Issued: Decodable {
            var client_attestation: String
            var expires_in: Double
        }
        let issued = try JSONDecoder().decode(Issued.self, from: data)
        current = (issued.client_attestation, now().addingTimeInterval(issued.expires_in))
        return (issued.client_attestation, key)
    }

    private func challenge() async throws -> String {
        struct Challenge: Decodable { var attestation_challenge: String }
        return try JSONDecoder().decode(Challenge.self, from: try await post("/connect/attestation/challenge", nil)).attestation_challenge
    }

    private func post(_ path: String, _ body: [String: Any]?) async throws -> Data {
        var request = ModgudClient.json(issuer.appendingPathComponent(String(path.dropFirst())), body)
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let (data, http) = try await ModgudClient.transmit(request, on: urlSession)
        guard (200..<300).contains(http.statusCode) else { throw ModgudClient.error(http, data) }
        return data
    }
}

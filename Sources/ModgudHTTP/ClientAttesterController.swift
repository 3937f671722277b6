import Foundation
import Hummingbird
import ModgudDomain
import ModgudService
import WebAuthn

/// Modgud's Client Attester (issue 47), and the authorization server's challenge endpoint
/// (draft-ietf-oauth-attestation-based-client-auth-10 section 6.1):
///
/// - `POST /connect/attestation/challenge` → `{"attestation_challenge"}`: a challenge for the
///   platform's evidence and for a PoP's `challenge` claim.
/// - `POST /connect/attestation/apple` `{client_id, key_id, attestation_object, challenge, jwk}`:
///   a new App Attest key's attestation;
/// - `POST /connect/attestation/apple/assertion` `{client_id, key_id, assertion, challenge, jwk}`:
///   an assertion by an attested key;
/// - `POST /connect/attestation/android` `{client_id, certificate_chain, challenge, jwk}`: a
///   KeyStore key's attestation chain.
///
/// - `POST /connect/attestation/play-integrity` `{client_id, integrity_token, challenge, jwk,
///   package_name?}`: a Play Integrity verdict of a classic request whose nonce is the client
///   data hash (unpadded base64url), decrypted with the keys set for the app's package.
///
/// Each answers `{"client_attestation", "expires_in"}`: a Client Attestation JWT for the
/// instance key `jwk`. The platform's evidence covers SHA-256 of `<challenge>.<thumbprint of jwk>`
/// (docs/guides/genuine-apps.md). Refusals are the draft's errors.
struct ClientAttesterController: Sendable {
    let attester: ClientAttester?
    let verifier: ClientAttestationVerifier?
    let rateLimiter: RateLimiter
    let parsing: RequestParsing
    /// The DPoP verifier, whose current server nonce the challenge endpoint hands out too.
    var dpop: DPoPVerifier? = nil

    static let base = ClientAttestationPaths.base

    func register(on router: Router<ModgudRequestContext>) {
        router.post(RouterPath(ClientAttestationPaths.challenge), use: challenge)
        router.post(RouterPath(Self.base + "/apple"), use: apple)
        router.post(RouterPath(Self.base + "/apple/assertion"), use: appleAssertion)
        router.post(RouterPath(Self.base + "/android"), use: android)
        router.post(RouterPath(Self.base + "/play-integrity"), use: playIntegrity)
    }

    struct ChallengeBody: Encodable {
        var attestation_challenge: String
    }

    struct IssuedBody: Encodable {
        var client_attestation: String
        var expires_in: Int
    }

    struct AppleBody: Decodable {
        var client_id: String
        var key_id: String
        var attestation_object: String
        var challenge: String
        var jwk: ClientAttestationClaims.InstanceKey
        static let members: Set<String> = ["client_id", "key_id", "attestation_object", "challenge", "jwk"]
    }

    struct AssertionBody: Decodable {
        var client_id: String
        var key_id: String
        var assertion: String
        var challenge: String
        var jwk: ClientAttestationClaims.InstanceKey
        static let members: Set<String> = ["client_id", "key_id", "assertion", "challenge", "jwk"]
    }

    struct AndroidBody: Decodable {
        var client_id: String
        var certificate_chain: [String]
        var challenge: String
        var jwk: ClientAttestationClaims.InstanceKey
        static let members: Set<String> = ["client_id", "certificate_chain", "challenge", "jwk"]
    }

    struct PlayIntegrityBody: Decodable {
        var client_id: String
        var package_name: String?
        var integrity_token: String
        var challenge: String
        var jwk: ClientAttestationClaims.InstanceKey
        static let members: Set<String> = ["client_id", "package_name", "integrity_token", "challenge", "jwk"]
    }

    func challenge(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            _ = try await parsing.realm(request)
            guard let verifier else { throw ClientAttestationError.invalid("this server cannot attest clients (no master key)") }
            var response = OAuthResponses.json(ChallengeBody(attestation_challenge: verifier.challenge()))
            response.headers[.cacheControl] = "no-store"
            // A client in DPoP combined mode proves freshness with the DPoP nonce rather than
            // the attestation challenge (draft -11, "Providing Challenges through the Challenge
            // Endpoint"): the same answer carries a fresh one, sparing it a refused request.
            if let dpop { response.headers[.dpopNonce] = dpop.currentNonce }
            return response
        }
    }

    func apple(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, issuer, attester) = try await prepared(request, context)
            let body = try await parsing.json(AppleBody.self, request, allowed: AppleBody.members)
            let issued = try await attester.attestApple(
                realm: realm, issuer: issuer, clientID: body.client_id, keyID: try Self.bytes(body.key_id, "key_id"),
                attestationObject: try Self.bytes(body.attestation_object, "attestation_object"), challenge: body.challenge, instanceKey: body.jwk)
            return Self.issued(issued)
        }
    }

    func appleAssertion(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, issuer, attester) = try await prepared(request, context)
            let body = try await parsing.json(AssertionBody.self, request, allowed: AssertionBody.members)
            let issued = try await attester.assertApple(
                realm: realm, issuer: issuer, clientID: body.client_id, keyID: try Self.bytes(body.key_id, "key_id"),
                assertion: try Self.bytes(body.assertion, "assertion"), challenge: body.challenge, instanceKey: body.jwk)
            return Self.issued(issued)
        }
    }

    func android(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, issuer, attester) = try await prepared(request, context)
            let body = try await parsing.json(AndroidBody.self, request, allowed: AndroidBody.members)
            let chain = try body.certificate_chain.map { try Self.bytes($0, "certificate_chain") }
            let issued = try await attester.attestAndroid(
                realm: realm, issuer: issuer, clientID: body.client_id, chain: chain, challenge: body.challenge, instanceKey: body.jwk)
            return Self.issued(issued)
        }
    }

    func playIntegrity(_ request: Request, context: ModgudRequestContext) async -> Response {
        await respond(context) {
            let (realm, issuer, attester) = try await prepared(request, context)
            let body = try await parsing.json(PlayIntegrityBody.self, request, allowed: PlayIntegrityBody.members)
            let issued = try await attester.attestPlayIntegrity(
                realm: realm, issuer: issuer, clientID: body.client_id, packageName: body.package_name, token: body.integrity_token,
                challenge: body.challenge, instanceKey: body.jwk)
            return Self.issued(issued)
        }
    }

    /// The realm, issuer and attester, once the source is within `attestation.ip`.
    private func prepared(_ request: Request, _ context: ModgudRequestContext) async throws -> (String, String, ClientAttester) {
        let (realm, issuer) = try await parsing.realm(request)
        guard let attester else { throw ClientAttestationError.invalid("this server cannot attest clients (no master key)") }
        try await rateLimiter.check(.attestationPerIP, key: parsing.source(request, context: context), realm: realm.realmID, settings: realm.settings)
        return (realm.realmID, issuer, attester)
    }

    static func issued(_ issued: ClientAttester.Issued) -> Response {
        var response = OAuthResponses.json(IssuedBody(client_attestation: issued.attestation, expires_in: issued.expiresIn))
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// Base64 or base64url, padded or not (Apple's key ids come as standard base64).
    static func bytes(_ text: String, _ member: String) throws -> [UInt8] {
        let url = String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 }.filter { $0 != "=" })
        guard !url.isEmpty, url.utf8.count <= 65_536, let bytes = Base64URL.decode(url) else {
            throw ClientAttestationError.invalid("\(member) is not base64")
        }
        return bytes
    }

    private func respond(_ context: ModgudRequestContext, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch let error as ClientAttestationError {
            var response = OAuthResponses.error(OAuthError(error.code, error.detail))
            if let verifier { response.headers[.clientAttestationChallenge] = verifier.challenge() }
            return response
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch let limited as RateLimited {
            return OAuthResponses.rateLimited(limited)
        } catch {
            return ServerFailure.oauth(error, context: context, endpoint: "client_attestation")
        }
    }
}

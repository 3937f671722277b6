import Crypto
import Foundation
import ModgudDomain
import PQ
import WebAuthn
import X509

/// Modgud's Client Attester (draft-ietf-oauth-attestation-based-client-auth-10 section 1:
/// the role that vouches for a client instance): it verifies what the platform says about the
/// app (Apple App Attest, Android key attestation) and issues a short-lived Client Attestation
/// JWT, signed with the realm's key and bound to the instance key the app chose (`cnf.jwk`).
///
/// The platform's evidence is bound to the instance key and to a server challenge by one
/// value, the client data: `<challenge>.<thumbprint>` (the challenge from
/// `AttestationChallenges`, the RFC 7638 thumbprint of the instance key). Its SHA-256 is App
/// Attest's `clientDataHash` and Android's attestation challenge.
public struct ClientAttester: Sendable {
    /// A Client Attestation JWT and its lifetime in seconds.
    public struct Issued: Sendable {
        public var attestation: String
        public var expiresIn: Int
    }

    let pool: PQPool
    let keys: SigningKeyRing
    let verifier: ClientAttestationVerifier
    let clients: ClientAuthenticator
    public let roots: AttestationRoots
    /// Opens the clients' sealed Play Integrity decryption keys.
    let sealer: KeySealer
    /// How long an attestation lasts: an hour, after which the app proves itself again (an
    /// App Attest assertion costs the app no network round trip to Apple).
    public let lifetime: TimeInterval
    let clock: @Sendable () -> Date

    public init(
        pool: PQPool, keys: SigningKeyRing, verifier: ClientAttestationVerifier, clients: ClientAuthenticator, roots: AttestationRoots,
        sealer: KeySealer, lifetime: TimeInterval = 3600, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.pool = pool
        self.keys = keys
        self.verifier = verifier
        self.clients = clients
        self.roots = roots
        self.sealer = sealer
        self.lifetime = lifetime
        self.clock = clock
    }

    /// SHA-256 of the client data `<challenge>.<thumbprint>`.
    public static func clientDataHash(challenge: String, thumbprint: String) -> [UInt8] {
        Array(SHA256.hash(data: Array("\(challenge).\(thumbprint)".utf8)))
    }

    /// A new App Attest key: its attestation object verified (Apple's steps 1–9), the key stored.
    public func attestApple(
        realm: String, issuer: String, clientID: String, keyID: [UInt8], attestationObject: [UInt8], challenge: String,
        instanceKey: ClientAttestationClaims.InstanceKey
    ) async throws -> Issued {
        let settings = try await client(realm: realm, clientID: clientID)
        let key = try instanceKey.key()
        try await verifier.spend(challenge: challenge)
        let environments: Set<AppAttestVerifier.Environment> =
            settings.appAttestEnvironments == .productionAndDevelopment ? [.production, .development] : [.production]
        let attested: (key: AppAttestVerifier.AttestedKey, appID: String)
        do {
            attested = try await AppAttestVerifier(trustAnchors: roots.apple, verificationTime: clock()).verifyAttestation(
                attestationObject, keyID: keyID, clientDataHash: Self.clientDataHash(challenge: challenge, thumbprint: key.thumbprint),
                appIDs: settings.appleAppIDs, environments: environments)
        } catch { throw ClientAttestationError.invalid("App Attest: \(CertificatePathRefusals.record(error, realm: realm, clientID: clientID))") }
        let insert = AppAttestKeysTable.insert(
            realm: realm, keyID: keyID, clientID: clientID, appID: attested.appID, environment: attested.key.environment.rawValue,
            publicKey: attested.key.publicKey.x963Representation.map { $0 }, now: clock())
        guard try await pool.query(insert).first != nil else { throw ClientAttestationError.invalid("App Attest: this key was attested before") }
        return try await issue(realm: realm, issuer: issuer, clientID: clientID, key: instanceKey, platform: "apple-app-attest", app: attested.appID)
    }

    /// An assertion by an attested App Attest key (Apple's assertion steps 1–5): a fresh
    /// attestation without Apple's attestation service.
    public func assertApple(
        realm: String, issuer: String, clientID: String, keyID: [UInt8], assertion: [UInt8], challenge: String,
        instanceKey: ClientAttestationClaims.InstanceKey
    ) async throws -> Issued {
        _ = try await client(realm: realm, clientID: clientID)
        let key = try instanceKey.key()
        try await verifier.spend(challenge: challenge)
        guard let stored = try await AppAttestKeysTable.key(realm: realm, keyID: keyID, pool: pool), stored.clientID == clientID,
            let publicKey = try? P256.Signing.PublicKey(x963Representation: stored.publicKey)
        else { throw ClientAttestationError.invalid("App Attest: the key is not attested for this client") }
        let counter: UInt32
        do {
            counter = try AppAttestVerifier.verifyAssertion(
                assertion, clientDataHash: Self.clientDataHash(challenge: challenge, thumbprint: key.thumbprint), publicKey: publicKey,
                appID: stored.appID)
        } catch { throw ClientAttestationError.invalid("App Attest: \(error)") }
        guard try await pool.query(AppAttestKeysTable.advance(realm: realm, keyID: keyID, counter: Int64(counter), now: clock())).first != nil else {
            throw ClientAttestationError.invalid("App Attest: the assertion's counter does not increase")
        }
        return try await issue(realm: realm, issuer: issuer, clientID: clientID, key: instanceKey, platform: "apple-app-attest", app: stored.appID)
    }

    /// An Android KeyStore key's attestation chain (`AndroidKeyChainVerifier`), whose
    /// attestation challenge is the client data hash.
    public func attestAndroid(
        realm: String, issuer: String, clientID: String, chain: [[UInt8]], challenge: String, instanceKey: ClientAttestationClaims.InstanceKey
    ) async throws -> Issued {
        let settings = try await client(realm: realm, clientID: clientID)
        let key = try instanceKey.key()
        try await verifier.spend(challenge: challenge)
        let apps = settings.androidApps.map { app in
            AndroidKeyChainVerifier.App(packageName: app.packageName, signatureDigests: Set(app.sha256Fingerprints.compactMap(AndroidApp.fingerprintBytes)))
        }
        // Google's status list as the operator last imported it (or as shipped): only the
        // chain's own serials are looked up.
        let serials = chain.compactMap { try? Certificate(derEncoded: $0) }.map { RevokedSerials.hex($0.serialNumber) }
        let revocations = try await AndroidAttestationStatusTable.revoked(among: serials, pool: pool)
        let verified: AndroidKeyChainVerifier.Verified
        do {
            verified = try await AndroidKeyChainVerifier(trustAnchors: roots.google, verificationTime: clock(), revocations: revocations).verify(
                chain: chain, challenge: Self.clientDataHash(challenge: challenge, thumbprint: key.thumbprint), apps: apps)
        } catch {
            throw ClientAttestationError.invalid("Android key attestation: \(CertificatePathRefusals.record(error, realm: realm, clientID: clientID))")
        }
        return try await issue(realm: realm, issuer: issuer, clientID: clientID, key: instanceKey, platform: "android-key-attestation", app: verified.packageName)
    }

    /// A Play Integrity verdict of a classic request (`PlayIntegrityVerifier`), decrypted and
    /// verified with the keys the app's owner set for its package; the request's nonce is the
    /// client data hash in unpadded base64url (docs/guides/genuine-apps.md).
    public func attestPlayIntegrity(
        realm: String, issuer: String, clientID: String, packageName: String?, token: String, challenge: String,
        instanceKey: ClientAttestationClaims.InstanceKey
    ) async throws -> Issued {
        let settings = try await client(realm: realm, clientID: clientID)
        let key = try instanceKey.key()
        try await verifier.spend(challenge: challenge)
        let keys = try await ClientsTable.playIntegrityKeys(realm: realm, clientID: clientID, pool: pool)
        let candidates = settings.androidApps.filter { app in keys[app.packageName] != nil && (packageName == nil || packageName == app.packageName) }
        guard !candidates.isEmpty else { throw ClientAttestationError.invalid("Play Integrity: no keys are set for \(packageName ?? "the client's Android apps")") }
        let nonce = Base64URL.encode(Self.clientDataHash(challenge: challenge, thumbprint: key.thumbprint))
        var refusal = "Play Integrity: the token does not decrypt with any of the client's keys"
        for app in candidates {
            guard let stored = keys[app.packageName], let sealed = Data(base64Encoded: stored.sealedDecryptionKey),
                let opened = try? sealer.open(Array(sealed), realm: realm, kid: ClientAdministration.playIntegrityKID(clientID: clientID, packageName: app.packageName)),
                let verifier = try? PlayIntegrityVerifier(decryptionKey: Data(opened).base64EncodedString(), verificationKey: stored.verificationKey)
            else { continue }
            do {
                let verdict = try verifier.verify(
                    token, nonce: nonce, packageName: app.packageName,
                    certificateDigests: Set(app.sha256Fingerprints.compactMap(AndroidApp.fingerprintBytes)), now: clock())
                return try await issue(realm: realm, issuer: issuer, clientID: clientID, key: instanceKey, platform: "play-integrity", app: verdict.packageName)
            } catch WebAuthnError.attestationInvalid(_, let reason) where reason == PlayIntegrityVerifier.undecryptable {
                continue
            } catch {
                refusal = "Play Integrity: \(error)"
                break
            }
        }
        throw ClientAttestationError.invalid(refusal)
    }

    private func client(realm: String, clientID: String) async throws -> ClientSettings {
        guard let settings = try await clients.enabledClient(realm: realm, clientID: clientID) else {
            throw ClientAttestationError.invalid("no such client")
        }
        return settings
    }

    private func issue(realm: String, issuer: String, clientID: String, key: ClientAttestationClaims.InstanceKey, platform: String, app: String)
        async throws -> Issued
    {
        let now = clock()
        let claims = ClientAttestationClaims(
            iss: issuer, sub: clientID, iat: .init(value: now), exp: .init(value: now.addingTimeInterval(lifetime)), cnf: .init(jwk: key),
            platform: platform, app: app)
        return Issued(attestation: try await keys.sign(claims, realm: realm, type: ClientAttestationClaims.type), expiresIn: Int(lifetime))
    }
}

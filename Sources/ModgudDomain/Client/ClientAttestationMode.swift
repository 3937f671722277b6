/// Whether a client's requests must come from a genuine app instance (issue 47):
/// attestation-based client authentication, draft-ietf-oauth-attestation-based-client-auth.
/// Operators turn it on in two steps: `allowed` while apps that send no attestation are still
/// in use, then `required`.
public enum ClientAttestationMode: String, Codable, Hashable, Sendable, CaseIterable {
    /// The attestation headers are ignored.
    case off
    /// A request with the headers is checked (a bad attestation is refused) and its tokens say
    /// they went to an attested instance; a request without them is served as before.
    case allowed
    /// Every request of the client's must carry a valid attestation and its proof of possession,
    /// or it is refused before anything is sent, stored or spent.
    case required
}

/// Which Apple App Attest environments a client accepts keys from (the app's
/// `com.apple.developer.devicecheck.appattest-environment` entitlement).
public enum AppAttestEnvironments: String, Codable, Hashable, Sendable, CaseIterable {
    /// Keys of App Store, TestFlight and enterprise builds only (the default).
    case production
    /// Development keys too: Xcode builds. Never for a client real users' apps use.
    case productionAndDevelopment = "production+development"
}

/// That a token went to an app instance that proved itself genuine (issue 47): how, which app,
/// and the instance key. JWT access tokens and introspection state it as `client_attestation`.
public struct ClientAttestationFact: Codable, Hashable, Sendable {
    /// `apple-app-attest`, `android-key-attestation` or `play-integrity`.
    public var platform: String
    /// The App ID (`TEAMID.bundle`) or Android package.
    public var app: String
    /// The RFC 7638 thumbprint of the instance key (`cnf.jwk` of its Client Attestation).
    public var jkt: String

    public init(platform: String, app: String, jkt: String) {
        self.platform = platform
        self.app = app
        self.jkt = jkt
    }
}

/// The Play Console's keys for one Android app's Play Integrity verdicts (issue 47): "Response
/// encryption" in the Play Console's App integrity page. Only the verdicts of *classic* requests
/// are encrypted with these keys; a *standard* request's token is decrypted by Google's servers.
public struct PlayIntegrityKeys: Codable, Hashable, Sendable {
    /// The AES-256 decryption key, sealed with the master key (base64); never plaintext.
    public var sealedDecryptionKey: String
    /// The EC P-256 verification key as the Play Console gives it: base64 of its DER
    /// SubjectPublicKeyInfo. Public.
    public var verificationKey: String

    public init(sealedDecryptionKey: String, verificationKey: String) {
        self.sealedDecryptionKey = sealedDecryptionKey
        self.verificationKey = verificationKey
    }
}

import CBOR
import Crypto
import Foundation
import X509

/// Apple App Attest (`DCAppAttestService`): the attestation of a new app key and the
/// assertions it signs later, verified as Apple's "Validating apps that connect to your server"
/// lists the steps. The format is WebAuthn's shape (an attestation object with authenticator
/// data) under its own `fmt`, `apple-appattest`, so it reuses this library's CBOR, COSE and
/// certificate code; the differences are an App ID in place of an RP ID, a key id that is the
/// hash of the public key, and a counter that starts at zero.
public struct AppAttestVerifier: Sendable {
    /// Which App Attest environment an app's keys come from (the app's
    /// `com.apple.developer.devicecheck.appattest-environment` entitlement).
    public enum Environment: String, Sendable, CaseIterable {
        case production
        case development

        /// The AAGUID the environment writes into authenticator data (step 8): `appattest`
        /// followed by seven zero bytes, or `appattestdevelop`.
        public var aaguid: [UInt8] {
            switch self {
            case .production: Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
            case .development: Array("appattestdevelop".utf8)
            }
        }
    }

    /// An attested key: what the server stores to verify the key's assertions.
    public struct AttestedKey: Sendable {
        /// The key id the app holds (`generateKey`'s answer): SHA-256 of the public key.
        public var keyID: [UInt8]
        public var publicKey: P256.Signing.PublicKey
        /// Apple's receipt, for the fraud-metric service (kept, not checked here).
        public var receipt: [UInt8]
        /// The environment the key was made in (from its AAGUID).
        public var environment: Environment
    }

    public static let format = "apple-appattest"
    /// 1.2.840.113635.100.8.2: the nonce extension of the credential certificate.
    static let nonceExtension = AppleAttestation.nonceExtension

    /// Apple's App Attestation root (or a test authority standing in for it).
    public var trustAnchors: [Certificate]
    /// The instant certificate validity is checked at (nil: now).
    public var verificationTime: Date?

    public init(trustAnchors: [Certificate], verificationTime: Date? = nil) {
        self.trustAnchors = trustAnchors
        self.verificationTime = verificationTime
    }

    /// Verifies an attestation object made by `attestKey(_:clientDataHash:)`.
    /// - Parameters:
    ///   - appID: `TEAMID.bundle.id`, one of the client's.
    ///   - environments: the environments accepted (a production client accepts only production keys).
    /// - Throws: `WebAuthnError` naming the step that failed.
    public func verifyAttestation(
        _ attestationObject: [UInt8], keyID: [UInt8], clientDataHash: [UInt8], appIDs: Set<String>, environments: Set<Environment>
    ) async throws(WebAuthnError) -> (key: AttestedKey, appID: String) {
        let format = Self.format
        let object: CBOR
        do { object = try CBORDecoder().decode(attestationObject) } catch { throw .malformedCBOR(error) }
        guard object[text: "fmt"]?.textValue == format else {
            throw .unsupportedAttestationFormat(object[text: "fmt"]?.textValue ?? "(none)")
        }
        guard let statement = object[text: "attStmt"], let authDataBytes = object[text: "authData"]?.bytesValue else {
            throw .malformedAttestationObject("attStmt and authData are required")
        }
        let authData = try AuthenticatorData(authDataBytes)
        guard let credential = authData.attestedCredential else { throw .missingAttestedCredential }
        // Step 1: x5c (credCert, then the intermediate) leads to Apple's App Attestation root.
        let chain = try AttestationCertificates.chain(statement[text: "x5c"], format: format)
        let policy = VerificationPolicy(trustAnchors: trustAnchors, requireTrustedAttestation: true, verificationTime: verificationTime)
        _ = try await AttestationCertificates.validate(chain, policy: policy, format: format, rules: .apple)
        let credentialCertificate = chain[0]
        // Steps 2–4: nonce = SHA-256(authData ‖ clientDataHash) is the certificate's extension.
        let nonce = Array(SHA256.hash(data: authDataBytes + clientDataHash))
        guard let value = AttestationCertificates.extensionValue(credentialCertificate, oid: Self.nonceExtension),
            let certified = AppleAttestation.nonce(in: value), certified == nonce
        else { throw .attestationInvalid(format: format, reason: "the certificate nonce does not match authenticator data and client data") }
        // Step 5: the key id is SHA-256 of the certificate's public key (uncompressed point).
        guard let publicKey = P256.Signing.PublicKey(credentialCertificate.publicKey),
            Array(SHA256.hash(data: publicKey.x963Representation)) == keyID
        else { throw .attestationInvalid(format: format, reason: "the key id is not the hash of the certificate's key") }
        // Step 6: the RP ID hash is SHA-256 of one of the client's App IDs.
        guard let appID = appIDs.first(where: { Array(SHA256.hash(data: Array($0.utf8))) == authData.rpIDHash }) else {
            throw .rpIDHashMismatch
        }
        // Step 7: a new key's counter is zero.
        guard authData.signCount == 0 else { throw .attestationInvalid(format: format, reason: "the counter of a new key is not zero") }
        // Step 8: the AAGUID names the environment, which the client must accept.
        guard let environment = Environment.allCases.first(where: { $0.aaguid == credential.aaguid }) else {
            throw .attestationInvalid(format: format, reason: "the AAGUID is not an App Attest environment")
        }
        guard environments.contains(environment) else {
            throw .attestationInvalid(format: format, reason: "a key of the \(environment.rawValue) environment is not accepted for this client")
        }
        // Step 9: the credential id is the key id, and the credential key the certificate's.
        guard credential.credentialID == keyID, AttestationCertificates.sameKey(credentialCertificate, credential.publicKey) else {
            throw .attestationInvalid(format: format, reason: "the credential id or key is not the attested key")
        }
        let receipt = statement[text: "receipt"]?.bytesValue ?? []
        return (AttestedKey(keyID: keyID, publicKey: publicKey, receipt: receipt, environment: environment), appID)
    }

    /// Verifies an assertion made by `generateAssertion(_:clientDataHash:)` with a stored key.
    /// - Returns: the assertion's counter, which the caller stores only if it is above the
    ///   stored one (step 5: the database decides between concurrent assertions).
    /// - Throws: `WebAuthnError` naming the step that failed.
    public static func verifyAssertion(
        _ assertion: [UInt8], clientDataHash: [UInt8], publicKey: P256.Signing.PublicKey, appID: String
    ) throws(WebAuthnError) -> UInt32 {
        let object: CBOR
        do { object = try CBORDecoder().decode(assertion) } catch { throw .malformedCBOR(error) }
        guard let signature = object[text: "signature"]?.bytesValue, let authDataBytes = object[text: "authenticatorData"]?.bytesValue else {
            throw .malformedCredential("an App Attest assertion holds signature and authenticatorData")
        }
        // An assertion's authenticator data is 37 bytes: RP ID hash, flags, counter. Its flags
        // carry AT although no credential data follows (App Attest's, not WebAuthn's, layout),
        // so it is read by position rather than by `AuthenticatorData`'s strict rules.
        guard authDataBytes.count == 37 else { throw .malformedAuthenticatorData(.tooShort) }
        // Steps 1–3: the signature is over nonce = SHA-256(authenticatorData ‖ clientDataHash).
        let nonce = Array(SHA256.hash(data: authDataBytes + clientDataHash))
        guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature), publicKey.isValidSignature(parsed, for: nonce) else {
            throw .signatureInvalid
        }
        // Step 4: the RP ID hash is the App ID's.
        guard Array(authDataBytes[0..<32]) == Array(SHA256.hash(data: Array(appID.utf8))) else { throw .rpIDHashMismatch }
        return authDataBytes[33..<37].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
}

#if canImport(DeviceCheck)
import DeviceCheck
import Foundation

extension AttestedInstance {
    /// An instance attested with Apple App Attest (`DCAppAttestService`): the first time, a new
    /// App Attest key and its attestation; afterwards, an assertion by that key (no round trip
    /// to Apple). The key id is kept in `defaults` under `defaultsKey`. `key` is the instance key
    /// that signs each request's PoP: keep the same one across launches (a
    /// `SecureEnclaveDPoPKey` handle in the Keychain), as the App Attest key id is kept.
    ///
    /// Returns nil where App Attest is not supported (the simulator, some older devices):
    /// such devices go on unattested while the client's setting is `allowed`.
    public static func appAttest(
        issuer: URL, clientID: String, key: any DPoPSigner, defaults: UserDefaults = .standard, defaultsKey: String = "modgud.appAttestKeyID"
    ) -> AttestedInstance? {
        guard DCAppAttestService.shared.isSupported else { return nil }
        let store = KeyIDStore(defaults: defaults, key: defaultsKey)
        return AttestedInstance(issuer: issuer, clientID: clientID, key: key) { clientDataHash in
            let service = DCAppAttestService.shared
            if let keyID = store.keyID, let id = Data(base64Encoded: keyID) {
                return .appleAssertion(keyID: id, assertion: try await service.generateAssertion(keyID, clientDataHash: clientDataHash))
            }
            let keyID = try await service.generateKey()
            let object = try await service.attestKey(keyID, clientDataHash: clientDataHash)
            store.keyID = keyID
            return .appleAttestation(keyID: Data(base64Encoded: keyID) ?? Data(), attestationObject: object)
        }
    }

    /// Where the App Attest key id lives (it is not a secret: the key stays in the Secure Enclave).
    private final class KeyIDStore: @unchecked Sendable {
        let defaults: UserDefaults
        let key: String
        init(defaults: UserDefaults, key: String) {
            self.defaults = defaults
            self.key = key
        }
        var keyID: String? {
            get { defaults.string(forKey: key) }
            set { defaults.set(newValue, forKey: key) }
        }
    }
}
#endif

#if canImport(AuthenticationServices) && (os(iOS) || os(macOS) || os(visionOS))
import AuthenticationServices
import Foundation

/// The platform's passkey signals on iOS 26 and macOS 26 (`ASCredentialUpdater`, Apple's form
/// of WebAuthn Level 3's Signal API; issue 46): what the server accepts, the names to show,
/// and a credential it does not know, so that the device stops offering deleted passkeys.
///
/// CI runs on Linux and does not build this file; `ModgudClient.passkeySignals()` and
/// `ModgudError.unknownPasskey` carry the same data and are tested there.
@available(iOS 26.0, macOS 26.0, visionOS 26.0, *)
public enum PlatformPasskeySignals {
    /// After a sign-in or a change to the person's passkeys: every RP-ID's accepted credentials
    /// and the person's current names.
    public static func report(_ signals: [PasskeySignals]) async throws {
        let updater = ASCredentialUpdater()
        for signal in signals {
            guard let handle = Base64URL.decode(signal.userId) else { continue }
            try await updater.reportAllAcceptedPublicKeyCredentials(
                relyingPartyIdentifier: signal.rpId, userHandle: handle, acceptedCredentialIDs: signal.allAcceptedCredentialIds.compactMap(Base64URL.decode))
            try await updater.reportPublicKeyCredentialUpdate(relyingPartyIdentifier: signal.rpId, userHandle: handle, newName: signal.name)
        }
    }

    /// After `ModgudError.unknownPasskey`: the device hides or removes that passkey.
    public static func reportUnknown(credentialID: String, rpID: String) async throws {
        guard let id = Base64URL.decode(credentialID) else { return }
        try await ASCredentialUpdater().reportUnknownPublicKeyCredential(relyingPartyIdentifier: rpID, credentialID: id)
    }
}
#endif

import Foundation
import ModgudService
import WebAuthn
import WebAuthnTesting

/// Enrolls a passkey made by the software authenticator for a user, through the same service
/// the enrollment endpoint calls (fixtures for the console's browser test and benchmarks).
/// The authenticator claims Google Password Manager's AAGUID, so the provider shows by name and icon.
enum SoftwarePasskeyEnrollment {
    static let aaguid: [UInt8] = withUnsafeBytes(of: UUID(uuidString: "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4")!.uuid) { Array($0) }

    static func enroll(passkeys: PasskeyService, realm: RealmDirectory.Entry, userID: UUID, clientID: String, name: String) async throws {
        let begun = try await passkeys.beginEnrollment(realm: realm, userID: userID, clientID: clientID, metadata: .init(actor: "admin:cli"))
        guard case .creation(let challenge, let rpID, _, let handle, _, _, _, _) = begun.options else { throw CommandError("not a creation ceremony") }
        let credential = SoftwareCredential(rpID: rpID, userHandle: Base64URL.decode(handle) ?? Array(handle.utf8))
        let response = SoftwareAuthenticator(aaguid: aaguid).register(credential, .init(challenge: challenge, origin: "https://\(rpID)"))
        let attestation = try JSONEncoder().encode(response)
        _ = try await passkeys.completeEnrollment(
            realm: realm, userID: userID, clientID: clientID, ceremonyID: begun.ceremonyID.uuidString, attestation: Array(attestation),
            displayName: name, metadata: .init(actor: "admin:cli"))
    }
}

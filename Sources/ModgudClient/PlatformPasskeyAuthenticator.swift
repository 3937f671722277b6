#if canImport(AuthenticationServices) && (os(iOS) || os(macOS) || os(visionOS))
import AuthenticationServices
import Foundation

/// Passkeys through Apple's `AuthenticationServices` (iOS 17, macOS 14): the system sheet
/// creates and uses passkeys for the RP-ID, which the app's `webcredentials:` associated
/// domain must name (docs/guides/ios-and-android.md).
///
/// CI runs on Linux and does not build this file; the library's tests use a software
/// authenticator through the same `PasskeyAuthenticator` protocol.
@available(iOS 17.0, macOS 14.0, *)
public struct PlatformPasskeyAuthenticator: PasskeyAuthenticator {
    /// The window the system sheet attaches to.
    let anchor: @MainActor @Sendable () -> ASPresentationAnchor

    public init(anchor: @escaping @MainActor @Sendable () -> ASPresentationAnchor) {
        self.anchor = anchor
    }

    public func register(_ request: PasskeyRegistrationRequest) async throws -> PasskeyRegistration {
        try await Self.register(request, anchor: anchor)
    }

    public func authenticate(_ request: PasskeyAssertionRequest) async throws -> PasskeyAssertion {
        try await Self.authenticate(request, anchor: anchor)
    }

    @MainActor
    private static func register(_ request: PasskeyRegistrationRequest, anchor: @MainActor () -> ASPresentationAnchor) async throws
        -> PasskeyRegistration
    {
        let provider = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: request.rpID)
        let registration = provider.createCredentialRegistrationRequest(challenge: request.challenge, name: request.userName, userID: request.userID)
        registration.displayName = request.userDisplayName
        registration.userVerificationPreference = request.conditional ? .preferred : .required
        // Issue 46: an automatic upgrade right after a code sign-in (iOS 18, macOS 15).
        if request.conditional, #available(iOS 18.0, macOS 15.0, *) {
            registration.requestStyle = .conditional
        }
        // Passkeys honour excludeCredentials from iOS 17.4 (older systems may make a second one).
        if #available(iOS 17.4, macOS 14.4, *) {
            registration.excludedCredentials = request.excludedCredentialIDs.map { ASAuthorizationPlatformPublicKeyCredentialDescriptor(credentialID: $0) }
        }
        let authorization = try await AuthorizationRun(anchor: anchor()).perform(registration)
        guard let credential = authorization.credential as? ASAuthorizationPlatformPublicKeyCredentialRegistration,
            let attestation = credential.rawAttestationObject
        else { throw ModgudError.authenticator("the system returned no passkey registration") }
        return PasskeyRegistration(
            credentialID: credential.credentialID, clientDataJSON: credential.rawClientDataJSON, attestationObject: attestation,
            transports: ["internal", "hybrid"], attachment: "platform")
    }

    @MainActor
    private static func authenticate(_ request: PasskeyAssertionRequest, anchor: @MainActor () -> ASPresentationAnchor) async throws
        -> PasskeyAssertion
    {
        let provider = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: request.rpID)
        let assertion = provider.createCredentialAssertionRequest(challenge: request.challenge)
        assertion.userVerificationPreference = .required
        assertion.allowedCredentials = request.allowedCredentialIDs.map { ASAuthorizationPlatformPublicKeyCredentialDescriptor(credentialID: $0) }
        let authorization = try await AuthorizationRun(anchor: anchor()).perform(assertion)
        guard let credential = authorization.credential as? ASAuthorizationPlatformPublicKeyCredentialAssertion else {
            throw ModgudError.authenticator("the system returned no passkey assertion")
        }
        return PasskeyAssertion(
            credentialID: credential.credentialID, clientDataJSON: credential.rawClientDataJSON, authenticatorData: credential.rawAuthenticatorData,
            signature: credential.signature, userHandle: credential.userID, attachment: "platform")
    }
}

/// One `ASAuthorizationController` run, bridged to async: the controller holds its delegate
/// weakly, so the run keeps itself alive until the delegate answers.
@available(iOS 17.0, macOS 14.0, *)
@MainActor
private final class AuthorizationRun: NSObject {
    private let anchor: ASPresentationAnchor
    private var continuation: CheckedContinuation<ASAuthorization, any Error>?
    private var retained: AuthorizationRun?

    init(anchor: ASPresentationAnchor) {
        self.anchor = anchor
    }

    func perform(_ request: ASAuthorizationRequest) async throws -> ASAuthorization {
        try await withCheckedThrowingContinuation { continuation in
            self.continuation = continuation
            retained = self
            let controller = ASAuthorizationController(authorizationRequests: [request])
            controller.delegate = self
            controller.presentationContextProvider = self
            controller.performRequests()
        }
    }

    fileprivate func finish(_ result: Result<ASAuthorization, any Error>) {
        continuation?.resume(with: result)
        continuation = nil
        retained = nil
    }
}

@available(iOS 17.0, macOS 14.0, *)
extension AuthorizationRun: @preconcurrency ASAuthorizationControllerDelegate, @preconcurrency ASAuthorizationControllerPresentationContextProviding {
    func authorizationController(controller: ASAuthorizationController, didCompleteWithAuthorization authorization: ASAuthorization) {
        finish(.success(authorization))
    }

    func authorizationController(controller: ASAuthorizationController, didCompleteWithError error: any Error) {
        finish(.failure(ModgudError.authenticator(error.localizedDescription)))
    }

    func presentationAnchor(for controller: ASAuthorizationController) -> ASPresentationAnchor {
        anchor
    }
}
#endif

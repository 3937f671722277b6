import Foundation

/// An identity provider whose ID tokens a realm exchanges for its own tokens (issue 48; RFC 8693
/// token exchange): Sign in with Apple, Sign in with Google, or any OpenID provider by issuer.
/// The app gets the provider's ID token on the device (no browser) and sends it to the token
/// endpoint; Modgud verifies it as OpenID Connect Core section 3.1.3.7 says, with this
/// provider's keys and audiences.
public struct FederatedProvider: Codable, Hashable, Sendable {
    /// Which rules the provider's tokens follow beyond OpenID Connect's.
    public enum Kind: String, Codable, Hashable, Sendable, CaseIterable {
        /// Apple: `email_verified` and `is_private_email` may be strings; private relay
        /// addresses are real addresses for mail.
        case apple
        /// Google: the issuer is `https://accounts.google.com` or `accounts.google.com`.
        case google
        /// Any OpenID provider: its `iss` exactly.
        case oidc
    }

    /// When a first sign-in by the provider finds an account with the same address.
    public enum Linking: String, Codable, Hashable, Sendable, CaseIterable {
        /// Linked at once when the provider verified the address (`email_verified`); refused
        /// otherwise until the person proves the mailbox with an email code.
        case verifiedEmail = "VerifiedEmail"
        /// Only after an email code to that address (the default: no account takeover through
        /// an address the provider verified long ago and someone else holds now).
        case emailCode = "EmailCode"
        /// Never: the sign-in is refused; the person signs in another way and links there.
        case never = "Never"
    }

    /// The name the app uses: `apple`, `google`, or 1 to 64 letters, digits, `-` and `_`.
    public var id: String
    public var kind: Kind
    /// The `iss` its tokens carry.
    public var issuer: String
    /// Where its signing keys are published (https; http only for localhost).
    public var jwksURL: String
    /// The `aud` values accepted: Apple bundle ids and Services ids, Google client ids.
    public var audiences: [String]
    public var linking: Linking
    /// Whether the exchange must carry a nonce this server issued (true by default; a realm
    /// may turn it off for a provider whose SDK cannot pass one).
    public var requireNonce: Bool
    /// Apple only: how Modgud redeems the authorization code an app got from Sign in with
    /// Apple at Apple's token endpoint (Auth0's `apple-authz-code` form). Absent: only ID
    /// tokens are exchanged.
    public var appleTokenEndpoint: AppleTokenEndpoint?

    public init(
        id: String, kind: Kind, issuer: String, jwksURL: String, audiences: [String], linking: Linking = .emailCode, requireNonce: Bool = true
    ) {
        self.id = id
        self.kind = kind
        self.issuer = issuer
        self.jwksURL = jwksURL
        self.audiences = audiences
        self.linking = linking
        self.requireNonce = requireNonce
    }

    /// Sign in with Apple with Apple's published issuer and keys.
    public static func apple(audiences: [String]) -> FederatedProvider {
        FederatedProvider(id: "apple", kind: .apple, issuer: "https://appleid.apple.com", jwksURL: "https://appleid.apple.com/auth/keys", audiences: audiences)
    }

    /// Sign in with Google with Google's published issuer and keys.
    public static func google(audiences: [String]) -> FederatedProvider {
        FederatedProvider(
            id: "google", kind: .google, issuer: "https://accounts.google.com", jwksURL: "https://www.googleapis.com/oauth2/v3/certs", audiences: audiences)
    }

    /// A provider of `kind`, Apple's and Google's published issuer and JWKS URL filling in
    /// what is not given (an `oidc` provider needs both), and `linking` by name (`EmailCode`
    /// when not given): what the admin API and the CLI build from an operator's input.
    public static func configured(
        id: String, kind: Kind, issuer: String?, jwksURL: String?, audiences: [String], linking: String?, requireNonce: Bool?
    ) throws(DomainError) -> FederatedProvider {
        let defaults: FederatedProvider? =
            switch kind {
            case .apple: .apple(audiences: audiences)
            case .google: .google(audiences: audiences)
            case .oidc: nil
            }
        guard let issuer = issuer ?? defaults?.issuer, let jwks = jwksURL ?? defaults?.jwksURL else {
            throw DomainError("Federation.IssuerRequired", "An oidc provider needs its Issuer and JwksUrl.")
        }
        var chosen = Linking.emailCode
        if let linking {
            guard let named = Linking(rawValue: linking) else { throw DomainError("Federation.InvalidLinking", "Linking is EmailCode, VerifiedEmail or Never.") }
            chosen = named
        }
        return FederatedProvider(
            id: id, kind: kind, issuer: issuer, jwksURL: jwks, audiences: audiences, linking: chosen, requireNonce: requireNonce ?? true)
    }

    /// The issuers a token of this provider may name.
    public var acceptedIssuers: Set<String> {
        kind == .google && issuer == "https://accounts.google.com" ? [issuer, "accounts.google.com"] : [issuer]
    }

    public func validate() throws(DomainError) {
        guard !id.isEmpty, id.count <= 64, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_".contains($0)) }) else {
            throw DomainError("Federation.InvalidId", "A provider id is 1 to 64 letters, digits, '-' or '_'.")
        }
        for url in [issuer, jwksURL] where !Self.isSecureURL(url) {
            throw DomainError("Federation.InvalidURL", "\(url) must be an https URL (http only for localhost).")
        }
        guard !audiences.isEmpty, audiences.allSatisfy({ !$0.isEmpty && $0.count <= 255 }) else {
            throw DomainError("Federation.AudiencesRequired", "Provider \(id) needs the audiences its tokens are for (bundle ids, client ids).")
        }
        if let endpoint = appleTokenEndpoint {
            guard kind == .apple else { throw DomainError("Federation.NotApple", "Only an apple provider has Apple's token endpoint.") }
            try endpoint.validate(audiences: audiences)
        }
    }

    static func isSecureURL(_ text: String) -> Bool {
        guard text.count <= 2000, let url = URL(string: text), let host = url.host, !host.isEmpty else { return false }
        return url.scheme == "https" || (url.scheme == "http" && (host == "localhost" || host == "127.0.0.1"))
    }
}

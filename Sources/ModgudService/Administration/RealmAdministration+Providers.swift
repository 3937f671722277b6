import EventSourcing
import Foundation
import ModgudDomain

/// A realm's identity providers one at a time (issue 48; the CLI's `realm provider`), and the
/// Sign in with Apple key an Apple provider redeems authorization codes with
/// (`AppleAuthorizationCodes`): set by an operator (admin API, CLI), sealed with the master key
/// before it is written, never shown back (the public key is).
extension RealmAdministration {
    /// Adds `provider`, or replaces the one with its id (an Apple provider replaced by an Apple
    /// provider keeps its key).
    public func setProvider(realm: String, _ provider: FederatedProvider, metadata: EventMetadata) async throws -> Realm.State {
        try await update(realm, metadata: metadata) { settings in
            var providers = settings.federatedProviders ?? []
            var provider = provider
            if let existing = providers.firstIndex(where: { $0.id == provider.id }) {
                if providers[existing].kind == .apple, provider.kind == .apple { provider.appleTokenEndpoint = providers[existing].appleTokenEndpoint }
                providers[existing] = provider
            } else {
                providers.append(provider)
            }
            settings.federatedProviders = providers
        }.state
    }

    /// Removes the provider `id`: its tokens are refused from then on.
    public func removeProvider(realm: String, id: String, metadata: EventMetadata) async throws -> Realm.State {
        try await update(realm, metadata: metadata) { settings in
            var providers = settings.federatedProviders ?? []
            guard let existing = providers.firstIndex(where: { $0.id == id }) else {
                throw DomainError.notFound("Federation.ProviderNotFound", "The realm has no provider \(id).")
            }
            providers.remove(at: existing)
            settings.federatedProviders = providers.isEmpty ? nil : providers
        }.state
    }

    /// A provider as an operator describes it (`FederatedProvider.configured`), refusals translated.
    public func provider(
        id: String, kind: String, issuer: String?, jwksURL: String?, audiences: [String], linking: String?, requireNonce: Bool?
    ) async throws -> FederatedProvider {
        try await ServiceRefusal.translating {
            guard let kind = FederatedProvider.Kind(rawValue: kind) else {
                throw DomainError("Federation.InvalidKind", "A provider's Kind is apple, google or oidc.")
            }
            return try FederatedProvider.configured(
                id: id, kind: kind, issuer: issuer, jwksURL: jwksURL, audiences: audiences, linking: linking, requireNonce: requireNonce)
        }
    }

    /// What an operator gives: the team, the key id, Apple's client id for the app, the .p8 key,
    /// and Apple's token endpoint (only tests change it).
    public struct AppleKey: Sendable {
        public var teamID: String
        public var keyID: String
        public var clientID: String
        public var privateKeyPEM: String
        public var tokenURL: String?

        public init(teamID: String, keyID: String, clientID: String, privateKeyPEM: String, tokenURL: String? = nil) {
            self.teamID = teamID
            self.keyID = keyID
            self.clientID = clientID
            self.privateKeyPEM = privateKeyPEM
            self.tokenURL = tokenURL
        }
    }

    /// Sets `provider`'s Apple token endpoint (the provider must be an `apple` one).
    public func setAppleKey(realm: String, provider: String, key: AppleKey, metadata: EventMetadata) async throws -> Realm.State {
        guard let sealer else { throw ServiceRefusal(.invalid, "Realm.NoMasterKey", "Sealing the Apple key needs the master key.") }
        let sealed = try await ServiceRefusal.translating {
            try AppleAuthorizationCodes(sealer: sealer).seal(privateKeyPEM: key.privateKeyPEM, realm: realm, provider: provider)
        }
        let endpoint = AppleTokenEndpoint(
            teamID: key.teamID, keyID: key.keyID, clientID: key.clientID, tokenURL: key.tokenURL ?? AppleTokenEndpoint.appleTokenURL,
            sealedKey: sealed.sealed, publicKey: sealed.publicKey)
        return try await update(realm, metadata: metadata) { try Self.setEndpoint(endpoint, of: provider, in: &$0) }.state
    }

    /// Removes it: the provider's authorization codes are refused from then on.
    public func removeAppleKey(realm: String, provider: String, metadata: EventMetadata) async throws -> Realm.State {
        try await update(realm, metadata: metadata) { try Self.setEndpoint(nil, of: provider, in: &$0) }.state
    }

    private static func setEndpoint(_ endpoint: AppleTokenEndpoint?, of provider: String, in settings: inout RealmSettings) throws {
        guard var providers = settings.federatedProviders, let index = providers.firstIndex(where: { $0.id == provider && $0.kind == .apple }) else {
            throw DomainError.notFound("Federation.ProviderNotFound", "The realm has no apple provider \(provider).")
        }
        providers[index].appleTokenEndpoint = endpoint
        settings.federatedProviders = providers
    }
}

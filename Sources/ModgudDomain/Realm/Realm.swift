import Foundation

/// A realm: one tenant with its hosts, settings and signing keys.
public enum Realm: Aggregate {
    public static let streamType = "realm"

    public struct State: Sendable, Equatable {
        public var id: String?
        public var settings: RealmSettings?
        /// Every signing key ever used, oldest first; the last is the active one.
        public var signingKeys: [SigningKeyRotated] = []

        public var exists: Bool { id != nil }
        public var activeKey: SigningKeyRotated? { signingKeys.last }
    }

    public enum Command: Sendable {
        case create(id: String, settings: RealmSettings)
        case changeSettings(RealmSettings)
        case rotateSigningKey(kid: String, algorithm: String, publicJWK: String)
    }

    public static let initialState = State()

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [RealmEvent] {
        switch command {
        case .create(let id, let settings):
            guard !state.exists else { throw DomainError("Realm.AlreadyExists", "Realm \(id) already exists.") }
            guard (1...63).contains(id.count), id.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }) else {
                throw DomainError("Realm.InvalidID", "A realm id is 1 to 63 lower-case letters, digits and dashes.")
            }
            try settings.validate()
            return [.created(RealmCreated(realmID: id, settings: settings))]
        case .changeSettings(let settings):
            guard state.exists else { throw DomainError("Realm.NotFound", "No such realm.") }
            try settings.validate()
            guard settings != state.settings else { return [] }
            return [.settingsChanged(RealmSettingsChanged(settings: settings))]
        case .rotateSigningKey(let kid, let algorithm, let publicJWK):
            guard state.exists else { throw DomainError("Realm.NotFound", "No such realm.") }
            guard ["ES256", "RS256", "EdDSA"].contains(algorithm) else {
                throw DomainError("SigningKey.UnsupportedAlgorithm", "Signing keys are ES256, RS256 or EdDSA.")
            }
            guard !state.signingKeys.contains(where: { $0.kid == kid }) else {
                throw DomainError("SigningKey.DuplicateKid", "Key id \(kid) was used before.")
            }
            return [.signingKeyRotated(SigningKeyRotated(kid: kid, algorithm: algorithm, publicJWK: publicJWK, rotatedAt: now))]
        }
    }

    public static func evolve(_ state: State, _ event: RealmEvent) -> State {
        var next = state
        switch event {
        case .created(let created):
            next.id = created.realmID
            next.settings = created.settings
        case .settingsChanged(let changed):
            next.settings = changed.settings
        case .signingKeyRotated(let rotated):
            next.signingKeys.append(rotated)
        }
        return next
    }
}

import Foundation

/// A realm: one tenant with its hosts, settings and signing keys.
public enum Realm: Aggregate {
    public static let streamType = "realm"

    public struct State: Sendable, Equatable {
        public var id: String?
        public var settings: RealmSettings?
        /// Every signing key ever used, oldest first; the last is the active one.
        public var signingKeys: [SigningKeyRotated] = []
        /// The keys retired: out of the JWKS, their private keys destroyed.
        public var retiredKids: Set<String> = []

        public var exists: Bool { id != nil }
        public var activeKey: SigningKeyRotated? { signingKeys.last }
        /// The keys still published, oldest first (the active one last).
        public var publishedKeys: [SigningKeyRotated] { signingKeys.filter { !retiredKids.contains($0.kid) } }

        /// When a key stopped signing: when the key after it was rotated in (nil: still active).
        public func rotatedOutAt(_ kid: String) -> Date? {
            guard let index = signingKeys.firstIndex(where: { $0.kid == kid }), index + 1 < signingKeys.count else { return nil }
            return signingKeys[index + 1].rotatedAt
        }
    }

    /// How long a rotated-out key stays published before it may be retired: the longest an
    /// access or ID token lives (`NativeGrantSettings`: 60 minutes at most), so every token it
    /// signed has expired. A forced retirement skips it (a key believed compromised).
    public static let retirementOverlap: TimeInterval = 60 * 60

    public enum Command: Sendable {
        case create(id: String, settings: RealmSettings)
        case changeSettings(RealmSettings)
        case rotateSigningKey(kid: String, algorithm: String, publicJWK: String)
        /// Retires a rotated-out key once `retirementOverlap` has passed since it stopped
        /// signing, or at once when `force` is set; never the active key.
        case retireSigningKey(kid: String, force: Bool)
    }

    public static let initialState = State()

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [RealmEvent] {
        switch command {
        case .create(let id, let settings):
            guard !state.exists else { throw DomainError.conflict("Realm.AlreadyExists", "Realm \(id) already exists.") }
            guard (1...63).contains(id.count), id.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }) else {
                throw DomainError("Realm.InvalidID", "A realm id is 1 to 63 lower-case letters, digits and dashes.")
            }
            try settings.validate()
            return [.created(RealmCreated(realmID: id, settings: settings))]
        case .changeSettings(let settings):
            guard state.exists else { throw DomainError.notFound("Realm.NotFound", "No such realm.") }
            try settings.validate()
            guard settings != state.settings else { return [] }
            return [.settingsChanged(RealmSettingsChanged(settings: settings))]
        case .rotateSigningKey(let kid, let algorithm, let publicJWK):
            guard state.exists else { throw DomainError.notFound("Realm.NotFound", "No such realm.") }
            guard ["ES256", "RS256", "EdDSA"].contains(algorithm) else {
                throw DomainError("SigningKey.UnsupportedAlgorithm", "Signing keys are ES256, RS256 or EdDSA.")
            }
            guard !state.signingKeys.contains(where: { $0.kid == kid }) else {
                throw DomainError("SigningKey.DuplicateKid", "Key id \(kid) was used before.")
            }
            return [.signingKeyRotated(SigningKeyRotated(kid: kid, algorithm: algorithm, publicJWK: publicJWK, rotatedAt: now))]
        case .retireSigningKey(let kid, let force):
            guard state.exists else { throw DomainError.notFound("Realm.NotFound", "No such realm.") }
            guard state.signingKeys.contains(where: { $0.kid == kid }) else { throw DomainError.notFound("SigningKey.NotFound", "The realm has no key \(kid).") }
            guard !state.retiredKids.contains(kid) else { return [] }
            guard let rotatedOut = state.rotatedOutAt(kid) else {
                throw DomainError("SigningKey.Active", "Key \(kid) is the active key: rotate to a new key first.")
            }
            let due = rotatedOut.addingTimeInterval(retirementOverlap)
            guard force || now >= due else {
                throw DomainError(
                    "SigningKey.InOverlap",
                    "Key \(kid) stopped signing at \(rotatedOut.formatted(.iso8601)); tokens it signed live until \(due.formatted(.iso8601)). Retire it then, or force it (a compromised key).")
            }
            return [.signingKeyRetired(SigningKeyRetired(kid: kid, retiredAt: now, forced: now < due))]
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
        case .signingKeyRetired(let retired):
            next.retiredKids.insert(retired.kid)
        }
        return next
    }
}

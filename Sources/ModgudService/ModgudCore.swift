import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// The composition root of one instance: the store with its inline projections, the
/// aggregate registries and the services above them. Built once at start-up.
public struct ModgudCore: Sendable {
    public let pool: PQPool
    public let store: PostgresEventStore
    public let realms: AggregateRegistry<Realm>
    public let clients: AggregateRegistry<Client>
    public let users: AggregateRegistry<User>
    public let families: AggregateRegistry<TokenFamily>
    public let keys: SigningKeyRing
    public let tokenService: TokenService
    public let clientAuthenticator: ClientAuthenticator
    public let realmDirectory: RealmDirectory

    /// - Parameters:
    ///   - masterKey: 32 bytes sealing the realms' private signing keys (nil: a tool that never signs).
    ///   - now: the clock (tests inject one).
    public init(pool: PQPool, masterKey: [UInt8]?, now: @escaping @Sendable () -> Date = { Date() }) throws {
        self.pool = pool
        store = PostgresEventStore(pool: pool, inlineProjections: TokenProjection.identity)
        realms = AggregateRegistry(store: store)
        clients = AggregateRegistry(store: store)
        users = AggregateRegistry(store: store)
        families = AggregateRegistry(store: store)
        keys = SigningKeyRing(pool: pool, sealer: try masterKey.map { try KeySealer(masterKey: $0) }, realms: realms)
        tokenService = TokenService(pool: pool, families: families, users: users, minter: TokenMinter(keys: keys), now: now)
        clientAuthenticator = ClientAuthenticator(pool: pool)
        realmDirectory = RealmDirectory(pool: pool)
    }

    /// The state of a user, for userinfo and sign-in.
    public func user(realm: String, id: UUID) async throws -> User.State {
        try await users.actor(for: StreamNames.user(realm: realm, userID: id)).current().state
    }
}

import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport

/// One service instance on a test database: a store with the identity projections and the
/// aggregate registries. Two harnesses on one database behave as two instances.
struct IdentityInstance {
    let pool: PQPool
    let store: PostgresEventStore
    let realms: AggregateRegistry<Realm>
    let clients: AggregateRegistry<Client>
    let users: AggregateRegistry<User>
    let families: AggregateRegistry<TokenFamily>
    let tokens: TokenTables

    /// Wraps the production composition root (no master key: tests that sign make their own ring).
    init(pool: PQPool) {
        let core = try! ModgudCore(pool: pool, masterKey: nil)
        self.pool = pool
        store = core.store
        realms = core.realmActors
        clients = core.clientActors
        users = core.userActors
        families = core.familyActors
        tokens = core.tokenService.tokens
    }

    func realm(_ id: String) async -> AggregateActor<Realm> { await realms.actor(for: StreamNames.realm(id)) }
    func user(_ id: UUID, realm: String = "demo") async -> AggregateActor<User> { await users.actor(for: StreamNames.user(realm: realm, userID: id)) }
    func family(_ id: UUID, realm: String = "demo") async -> AggregateActor<TokenFamily> {
        await families.actor(for: StreamNames.tokenFamily(realm: realm, familyID: id))
    }
}

let now = Date(timeIntervalSince1970: 1_800_000_000)
let demoSettings = RealmSettings(hosts: ["login.demo.test"], displayName: "Demo", primaryDomain: "demo.test")

import ArgumentParser
import EventSourcing
import ModgudService
import PQ

/// Opens what an admin command needs: a pool, the core (with the master key if configured)
/// and the admin service. The actor recorded in events is `admin:cli`.
struct AdminContext {
    let pool: PQPool
    let admin: AdminService
    let metadata = EventMetadata(actor: "admin:cli")

    static func open(_ database: DatabaseOptions) throws -> AdminContext {
        let pool = database.makePool(maxConnections: 4)
        let masterKey = try ModgudConfiguration.fromEnvironment().masterKey
        return AdminContext(pool: pool, admin: AdminService(core: try ModgudCore(pool: pool, masterKey: masterKey)))
    }

    func close() async { await pool.close() }
}

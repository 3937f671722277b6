import ArgumentParser
import EventSourcing
import ModgudDomain
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

    /// The mail outbox (opening messages needs the master key; listing does not use it).
    func outbox() throws -> MailOutbox {
        guard let secrets = admin.core.secrets else { throw CommandError("set MODGUD_MASTER_KEY") }
        return MailOutbox(pool: pool, secrets: secrets, vault: admin.core.vault)
    }
}

extension AdminContext {
    /// Opens a context, runs `body`, closes the context, and reports a refused command as one
    /// line (`Client.MixedGrants: …`) instead of a stack of types.
    static func run<T>(_ database: DatabaseOptions, _ body: (AdminContext) async throws -> T) async throws -> T {
        let context = try open(database)
        do {
            let value = try await body(context)
            await context.close()
            return value
        } catch let error as DomainError {
            await context.close()
            throw CommandError("\(error.code): \(error.message)")
        } catch {
            await context.close()
            throw error
        }
    }
}

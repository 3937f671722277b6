import ArgumentParser
import EventSourcing
import ModgudDomain
import ModgudService
import PQ

/// Opens what an admin command needs: a pool, the services (with the master key if
/// configured) and the administration. The actor recorded in events is `admin:cli`.
struct AdminContext {
    let pool: PQPool
    let admin: Administration
    let services: Services
    let metadata = EventMetadata(actor: "admin:cli")

    /// The services some commands use beside the administration.
    struct Services {
        let clients: ClientAuthenticator
        let tokens: TokenService
        let realms: RealmDirectory
        let passkeys: PasskeyService
        let signalStreams: SignalStreamService
        /// The console of the default operator realm (`OperatorConsole.with(settings:)` for another).
        let console: OperatorConsole
        /// `modgud privacy seal-legacy` with the default address retention.
        let legacySealer: LegacySealer
        /// Nil without the master key.
        let outbox: MailOutbox?
    }

    static func open(_ database: DatabaseOptions) throws -> AdminContext {
        let pool = database.makePool(maxConnections: 4)
        let masterKey = try ModgudConfiguration.fromEnvironment().masterKey
        let core = try ModgudCore(pool: pool, masterKey: masterKey)
        let services = Services(
            clients: core.clientAuthenticator, tokens: core.tokenService, realms: core.realmDirectory, passkeys: core.passkeys,
            signalStreams: core.signalStreams, console: core.console(settings: .init()), legacySealer: core.legacySealer(addressRetention: 30 * 86_400),
            outbox: try? core.mailOutbox())
        return AdminContext(pool: pool, admin: core.administration, services: services)
    }

    func close() async { await pool.close() }

    /// The mail outbox (opening messages needs the master key; listing does not use it).
    func outbox() throws -> MailOutbox {
        guard let outbox = services.outbox else { throw CommandError("set MODGUD_MASTER_KEY") }
        return outbox
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
        } catch let refused as ServiceRefusal {
            await context.close()
            throw CommandError(refused.description)
        } catch {
            await context.close()
            throw error
        }
    }
}

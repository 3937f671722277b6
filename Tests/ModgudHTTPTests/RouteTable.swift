import Hummingbird
import ModgudHTTP
@testable import ModgudService
import PQ

/// Every route the application serves, read from the router `buildRouter` makes, so the
/// OpenAPI completeness test and the endpoint fuzz test cannot miss a route the router has
/// (issue 23).
enum RouteTable {
    /// Method and path template; parameters are written `{name}`.
    static let all: [(method: HTTPRequest.Method, template: String)] = {
        // The router is built, never served: its pool never connects.
        let pool = PQPool(configuration: PQConfiguration(connectionString: "postgresql://unused@127.0.0.1:1/none"), options: .init(maxConnections: 1))
        let core = try! ModgudCore(pool: pool, masterKey: nil)
        return buildRouter(core: core).routes.map { (method: $0.method, template: $0.path.description) }
            .sorted { "\($0.template) \($0.method)" < "\($1.template) \($1.method)" }
    }()
}

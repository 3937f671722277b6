import Hummingbird
import ModgudService

/// One instance serving several cells (issue 71, docs/operations/cells.md): each cell is a
/// whole single-database service (the routes `buildRouter` makes over its composition),
/// and this responder sends each request to one of them by its host, before any SQL: the
/// instance's index of the cells' hosts (`CellHostIndex`) says which realm the host names in
/// which cell, and the directory's map (`CellMap.route`) says which cell serves it. Only a host
/// the index does not know yet (a realm created since its last refresh) is looked up in the
/// cells' realm caches.
public struct CellRouter: HTTPResponderBuilder {
    /// One cell as this instance serves it.
    public struct Cell {
        public var name: String
        /// The cell's realm cache (for a host the index does not know yet).
        public var realms: RealmDirectory
        public var readiness: ReadinessProbe
        public var router: Router<ModgudRequestContext>

        public init(name: String, realms: RealmDirectory, readiness: ReadinessProbe, router: Router<ModgudRequestContext>) {
            self.name = name
            self.realms = realms
            self.readiness = readiness
            self.router = router
        }
    }

    let cells: [Cell]
    let directory: CellDirectory
    let hosts: CellHostIndex

    public init(cells: [Cell], directory: CellDirectory, hosts: CellHostIndex) {
        self.cells = cells
        self.directory = directory
        self.hosts = hosts
    }

    public func buildResponder() -> Responder {
        Responder(cells: cells.map { ($0.name, $0.realms, $0.readiness, $0.router.buildResponder()) }, directory: directory, hosts: hosts)
    }

    public struct Responder: HTTPResponder {
        let cells: [(name: String, realms: RealmDirectory, readiness: ReadinessProbe, responder: RouterResponder<ModgudRequestContext>)]
        let directory: CellDirectory
        let hosts: CellHostIndex

        public func respond(to request: Request, context: ModgudRequestContext) async throws -> Response {
            // The instance's readiness, on any host: one cell's failover must not take the
            // others out of the balancer (`CellReadiness`).
            if request.method == .get, request.uri.path == "/health/ready" { return await ready() }
            switch directory.map.route(holders: await holders(of: request.head.authority ?? "")) {
            case .cell(let name):
                guard let cell = cells.first(where: { $0.name == name }) else { return Self.unserved(name) }
                return try await cell.responder.respond(to: request, context: context)
            case .fenced:
                var response = Problem.response(
                    "Realm.Moving", status: 503, detail: "This realm is moving to another cell: retry in a moment (docs/operations/cells.md).")
                response.headers[.retryAfter] = "1"
                return response
            case .unplaced:
                return Problem.response(
                    "Realm.Unplaced", status: 503, detail: "More than one cell holds this realm and the directory places it in none of them.")
            case nil:
                return Problem.response("Realm.NotFound", status: 404, detail: "No realm serves this host.")
            }
        }

        /// 200 unless draining or no cell is ready; every cell's verdict in the checks.
        func ready() async -> Response {
            let reports = await withTaskGroup(of: (String, ReadinessProbe.Report).self) { group in
                for cell in cells { group.addTask { (cell.name, await CellReadiness.check(cell.readiness)) } }
                var reports: [String: ReadinessProbe.Report] = [:]
                for await (name, report) in group { reports[name] = report }
                return reports
            }
            return ReadinessResponse.render(CellReadiness.combine(reports))
        }

        /// The cells that serve a realm on `authority`'s host, and the realm each serves there.
        func holders(of authority: String) async -> [String: String] {
            guard !authority.isEmpty else { return [:] }
            if let known = hosts.holders(ofHost: RealmDirectory.normalize(authority)) { return known }
            var holders: [String: String] = [:]
            for cell in cells {
                // A cell that cannot answer is left out: its realms fail there, not everywhere.
                if let entry = try? await cell.realms.realm(forHost: authority) { holders[cell.name] = entry.realmID }
            }
            return holders
        }

        /// The directory names a cell this instance does not serve (added after it started).
        static func unserved(_ name: String) -> Response {
            var response = Problem.response(
                "Cell.NotServed", status: 503, detail: "This instance does not serve cell \(name) yet: restart it to open the new cell.")
            response.headers[.retryAfter] = "5"
            return response
        }
    }
}

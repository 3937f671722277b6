/// What the cell directory says (issue 71, docs/operations/cells.md): the cells, in the order
/// they were added, and which cell serves each placed realm. Pure: `CellDirectory` loads it,
/// `CellRouter` asks it where a request goes.
///
/// A realm's issuer hosts stay in its settings inside its cell (the one place the admin API
/// edits them); the directory holds only the placement, so a host change needs no second write.
/// The request's host is looked up in every cell's realm cache, and the placement chooses
/// among the cells that know it.
public struct CellMap: Sendable, Equatable {
    public struct Cell: Sendable, Equatable {
        public var name: String
        public var databaseURL: String

        public init(name: String, databaseURL: String) {
            self.name = name
            self.databaseURL = databaseURL
        }
    }

    /// A placed realm's state: served by its cell, or fenced while it moves.
    public enum State: String, Sendable, Equatable {
        case serving
        case moving
    }

    public struct Placement: Sendable, Equatable {
        public var cell: String
        public var state: State

        public init(cell: String, state: State = .serving) {
            self.cell = cell
            self.state = state
        }
    }

    /// Where one request goes.
    public enum Route: Sendable, Equatable {
        /// To this cell's routes.
        case cell(String)
        /// The realm is moving: writes wait for the flip (503 with `Retry-After`).
        case fenced(realm: String)
        /// Several cells hold the host's realm and the directory places it in none of them:
        /// never guess between two copies (503, an operator's `cell place` settles it).
        case unplaced(realm: String)
    }

    /// The cells, the first added first: the home cell, which serves every host no realm
    /// claims (health, metrics, the admin API, the console) and realms created over the admin API.
    public var cells: [Cell]
    public var placements: [String: Placement]

    public init(cells: [Cell], placements: [String: Placement] = [:]) {
        self.cells = cells
        self.placements = placements
    }

    /// The cell of hosts no realm claims.
    public var home: String? { cells.first?.name }

    /// Where a request for a host goes, given which cells know a realm by that host
    /// (`holders`: cell name → realm id).
    ///
    /// - A host no cell knows goes home (which answers `Realm.NotFound`, or serves the
    ///   instance's own routes).
    /// - A placed realm goes to its cell, whether or not the others still hold a copy (the
    ///   source of a finished move keeps its rows until `cell retire`), or is fenced.
    /// - An unplaced realm held by exactly one cell goes there: a realm created over the admin
    ///   API lives in the home cell without an operator placing it.
    public func route(holders: [String: String]) -> Route? {
        let realms = Set(holders.values)
        guard let realm = realms.first else { return home.map(Route.cell) }
        // Two realms claim one host in different cells: the placed one, if exactly one is.
        if realms.count > 1 {
            let placed = realms.filter { placements[$0] != nil }
            guard placed.count == 1, let only = placed.first else { return .unplaced(realm: realms.sorted()[0]) }
            return route(holders: holders.filter { $0.value == only })
        }
        if let placement = placements[realm] {
            return placement.state == .moving ? .fenced(realm: realm) : .cell(placement.cell)
        }
        return holders.count == 1 ? holders.keys.first.map(Route.cell) : .unplaced(realm: realm)
    }
}

import PQ

/// The one home of the cell directory's SQL (issue 71). The directory is its own small
/// database, never a cell: its schema is these two tables, created by `modgud cell add` and by
/// every instance that starts with `MODGUD_DIRECTORY_URL` (idempotent).
enum CellDirectoryTable {
    /// Every change NOTIFYs this channel after it commits; instances reload on it and poll too.
    static let channel = "modgud_cells"

    static let schema: [PQQuery] = [
        """
        CREATE TABLE IF NOT EXISTS cells (
            name text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
            database_url text NOT NULL,
            added_at timestamptz NOT NULL DEFAULT clock_timestamp()
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS realm_placements (
            realm_id text PRIMARY KEY,
            cell text NOT NULL REFERENCES cells (name),
            state text NOT NULL DEFAULT 'serving' CHECK (state IN ('serving', 'moving')),
            changed_at timestamptz NOT NULL DEFAULT clock_timestamp()
        )
        """,
    ]

    static let cells: PQQuery = "SELECT name, database_url FROM cells ORDER BY added_at, name"
    static let placements: PQQuery = "SELECT realm_id, cell, state FROM realm_placements"

    static func addCell(name: String, databaseURL: String) -> PQQuery {
        """
        INSERT INTO cells (name, database_url) VALUES (\(name), \(databaseURL))
        ON CONFLICT (name) DO UPDATE SET database_url = EXCLUDED.database_url
        """
    }

    static func place(realm: String, cell: String, state: CellMap.State) -> PQQuery {
        """
        INSERT INTO realm_placements (realm_id, cell, state) VALUES (\(realm), \(cell), \(state.rawValue))
        ON CONFLICT (realm_id) DO UPDATE SET cell = EXCLUDED.cell, state = EXCLUDED.state, changed_at = clock_timestamp()
        """
    }

    /// Whether a cell's URL reached a standby (`CellHealth`).
    static let isStandby: PQQuery = "SELECT pg_is_in_recovery()"

    static let notify: PQQuery = "SELECT pg_notify('modgud_cells', 'changed')"

    static func map(cells: PQResult, placements: PQResult) throws -> CellMap {
        var map = CellMap(
            cells: try cells.rows.map { CellMap.Cell(name: try $0.decode(String.self, at: 0), databaseURL: try $0.decode(String.self, at: 1)) })
        for row in placements.rows {
            let state = CellMap.State(rawValue: try row.decode(String.self, at: 2)) ?? .serving
            map.placements[try row.decode(String.self, at: 0)] = CellMap.Placement(cell: try row.decode(String.self, at: 1), state: state)
        }
        return map
    }
}

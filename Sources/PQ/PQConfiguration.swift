#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How to reach a PostgreSQL server.
///
/// `connectionString` is anything libpq accepts: a `postgresql://` URL, a `key=value`
/// string, or empty to use the standard `PG*` environment variables (`PGHOST`, `PGPORT`,
/// `PGUSER`, `PGDATABASE`, `PGPASSWORD`, …).
public struct PQConfiguration: Sendable, Hashable {
    /// A URL, a key=value string, or "" for the `PG*` environment variables.
    public var connectionString: String
    /// Shown in `pg_stat_activity.application_name`.
    public var applicationName: String
    /// Seconds to wait for the TCP connection and authentication, per host of a multi-host
    /// URL: a lost primary listed first costs every new connection this long before libpq
    /// tries the next host (docs/operations/production.md, "High availability").
    public var connectTimeoutSeconds: Int
    /// Server-side limit per statement, in milliseconds (0: none).
    public var statementTimeoutMilliseconds: Int

    public init(
        connectionString: String,
        applicationName: String = "modgud",
        connectTimeoutSeconds: Int = 3,
        statementTimeoutMilliseconds: Int = 0
    ) {
        self.connectionString = connectionString
        self.applicationName = applicationName
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
    }

    /// `MODGUD_DATABASE_URL` when set, else the `PG*` environment variables (an empty string).
    public static func fromEnvironment(variable: String = "MODGUD_DATABASE_URL") -> PQConfiguration {
        if let url = getenv(variable).map({ String(cString: $0) }), !url.isEmpty {
            return PQConfiguration(connectionString: url)
        }
        return PQConfiguration(connectionString: "")
    }

    /// The connection string with secrets masked, for logs and error messages.
    public var redactedDescription: String {
        if connectionString.isEmpty { return "(PG* environment)" }
        // postgresql://user:secret@host/db → postgresql://user:***@host/db
        let characters = Array(connectionString)
        if let scheme = Self.find(Array("://"), in: characters),
            let at = characters[(scheme + 3)...].firstIndex(of: "@"),
            let colon = characters[(scheme + 3)..<at].firstIndex(of: ":")
        {
            return String(characters[...colon]) + "***" + String(characters[at...])
        }
        // key=value form: mask password=…
        return connectionString.split(separator: " ")
            .map { $0.hasPrefix("password=") ? "password=***" : String($0) }
            .joined(separator: " ")
    }

    private static func find(_ needle: [Character], in haystack: [Character]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where Array(haystack[start..<(start + needle.count)]) == needle {
            return start
        }
        return nil
    }

    /// Keywords and values for `PQconnectdbParams`; defaults first so that the string's own values win.
    var keywordsAndValues: [(String, String)] {
        var pairs: [(String, String)] = [
            ("application_name", applicationName),
            ("connect_timeout", String(connectTimeoutSeconds)),
            // A vanished database machine (no RST, packets dropped) is noticed: an idle
            // connection by keepalives within about 25 s; one whose request goes unacknowledged
            // by tcp_user_timeout within 10 s (keepalives do not run while data is in flight:
            // measured, a query sent on such a connection hung about 16 minutes without it).
            ("keepalives", "1"),
            ("keepalives_idle", "10"),
            ("keepalives_interval", "5"),
            ("keepalives_count", "3"),
            ("tcp_user_timeout", "10000"),
        ]
        var options = "-c TimeZone=UTC -c DateStyle=ISO -c client_min_messages=warning"
        if statementTimeoutMilliseconds > 0 {
            options += " -c statement_timeout=\(statementTimeoutMilliseconds)"
        }
        pairs.append(("options", options))
        pairs.append(("client_encoding", "UTF8"))
        if !connectionString.isEmpty {
            pairs.append(("dbname", connectionString))
        }
        return pairs
    }
}


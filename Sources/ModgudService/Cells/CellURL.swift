/// A cell's PostgreSQL URL with another database named in it: a move's staging database lives
/// on the target's cluster beside the cell's own (libpq, "Connection Strings": a URI names the
/// database in its path; in the keyword form the last `dbname` wins).
enum CellURL {
    static func replacingDatabase(in url: String, with database: String) -> String {
        guard let scheme = url.range(of: "://") else { return url + " dbname=" + database }
        let afterScheme = url[scheme.upperBound...]
        let queryStart = afterScheme.firstIndex(of: "?") ?? url.endIndex
        let authority = afterScheme[..<queryStart]
        let pathStart = authority.firstIndex(of: "/") ?? queryStart
        return String(url[..<pathStart]) + "/" + database + String(url[queryStart...])
    }
}

extension PQConfiguration {
    /// A connection string with another database named in it (libpq, "Connection Strings": a
    /// URI names the database in its path, multi-host ones too; in the keyword form the last
    /// `dbname` wins). A realm move's staging database beside a cell's, a test's database
    /// beside the cluster's.
    public static func replacingDatabase(in url: String, with database: String) -> String {
        let characters = Array(url)
        guard let colon = characters.indices.first(where: { characters[$0...].starts(with: "://") }) else {
            return url + " dbname=" + database
        }
        let afterScheme = colon + 3
        let query = characters[afterScheme...].firstIndex(of: "?") ?? characters.count
        let path = characters[afterScheme..<query].firstIndex(of: "/") ?? query
        let head = String(characters[..<path]), tail = String(characters[query...])
        return head + "/" + database + tail
    }
}

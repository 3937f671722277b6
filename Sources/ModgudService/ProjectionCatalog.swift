import EventStorePostgres

/// Every projection of the product, by name. Later issues add theirs here.
public enum ProjectionCatalog {
    /// Every inline projection of the identity core, in the order an append applies them.
    public static let identity: [any SQLProjection] = [
        RealmDirectoryProjection(), ClientDirectoryProjection(), UserDirectoryProjection(), TokenProjection(), PasskeyDirectoryProjection(),
    ]

    public static let all: [any SQLProjection] = identity + [LogStatisticsProjection(), UserSignInsProjection()]

    public static func named(_ name: String) -> (any SQLProjection)? {
        all.first { $0.name == name }
    }

    public static var asynchronous: [any SQLProjection] {
        all.filter { $0.mode == .async }
    }

    public static var inline: [any SQLProjection] {
        all.filter { $0.mode == .inline }
    }
}

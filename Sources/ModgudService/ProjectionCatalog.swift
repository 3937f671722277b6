import EventStorePostgres

/// Every projection of the product, by name. Later issues add theirs here.
public enum ProjectionCatalog {
    public static let all: [any SQLProjection] = TokenProjection.identity + [LogStatisticsProjection()]

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

import EventStorePostgres
import ModgudService

/// Every projection of the product, by name. Later issues add theirs here.
enum ProjectionCatalog {
    static let all: [any SQLProjection] = TokenProjection.identity + [LogStatisticsProjection()]

    static func named(_ name: String) -> (any SQLProjection)? {
        all.first { $0.name == name }
    }

    static var asynchronous: [any SQLProjection] {
        all.filter { $0.mode == .async }
    }

    static var inline: [any SQLProjection] {
        all.filter { $0.mode == .inline }
    }
}

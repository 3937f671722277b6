// swift-tools-version:6.1
import PackageDescription

/// Strict settings for every target of ours (STYLE.md habit 7).
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "modgud",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "modgud", targets: ["ModgudCLI"]),
        .library(name: "EventSourcing", targets: ["EventSourcing"]),
        .library(name: "PQ", targets: ["PQ"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // libpq, found through pkg-config (Debian/Ubuntu: libpq-dev; macOS: brew libpq).
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // PostgreSQL client over libpq: connections on dedicated threads, pool, binds, LISTEN/NOTIFY.
        .target(name: "PQ", dependencies: ["CLibPQ"], swiftSettings: strict),
        // Storage-agnostic event-sourcing kit: streams, versions, registry, store and projection protocols.
        .target(name: "EventSourcing", swiftSettings: strict),
        // The forward-only SQL migrations, embedded in the binary.
        .target(
            name: "ModgudSchema",
            path: "schema",
            resources: [
                .embedInCode("0001_event_store.sql"),
                .embedInCode("0002_log_statistics.sql"),
            ],
            swiftSettings: strict
        ),
        // The event store on PostgreSQL: appends, gap-safe log reads, projection daemon, rebuilds.
        .target(
            name: "EventStorePostgres",
            dependencies: [
                "PQ", "EventSourcing", "ModgudSchema",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // A private PostgreSQL cluster in a folder: initdb, start on a free port, stop.
        .target(name: "EmbeddedPostgres", swiftSettings: strict),
        .executableTarget(
            name: "ModgudCLI",
            dependencies: [
                "PQ", "EventSourcing", "EventStorePostgres", "EmbeddedPostgres", "ModgudSchema",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Test support: one embedded cluster per test process, a fresh database per test.
        .target(
            name: "PostgresTestSupport",
            dependencies: ["PQ", "EmbeddedPostgres", "EventStorePostgres", "ModgudSchema"],
            swiftSettings: strict
        ),
        .testTarget(name: "PQTests", dependencies: ["PQ", "PostgresTestSupport"], swiftSettings: strict),
        .testTarget(name: "EmbeddedPostgresTests", dependencies: ["EmbeddedPostgres", "PQ"], swiftSettings: strict),
        .testTarget(name: "EventSourcingTests", dependencies: ["EventSourcing"], swiftSettings: strict),
        .testTarget(
            name: "EventStorePostgresTests",
            dependencies: ["EventStorePostgres", "EventSourcing", "PQ", "PostgresTestSupport"],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)

// swift-tools-version:6.1
import PackageDescription

/// Strict settings for every target of ours (docs/architecture.md, "House habits"; habit 7).
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "modgud",
    platforms: [.macOS(.v15), .iOS(.v17)],
    products: [
        .executable(name: "modgud", targets: ["ModgudCLI"]),
        .library(name: "EventSourcing", targets: ["EventSourcing"]),
        .library(name: "PQ", targets: ["PQ"]),
        .library(name: "CBOR", targets: ["CBOR"]),
        .library(name: "WebAuthn", targets: ["WebAuthn"]),
        .library(name: "ModgudClient", targets: ["ModgudClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // The SMTP client: NIO is already built for Hummingbird; NIOSSL gives STARTTLS.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // Metrics: the API (already built for Hummingbird) and its Prometheus exposition.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Already built for Hummingbird: NIOHTTPTypes for the connection-deadline handler.
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // traits: [] keeps full Foundation and ICU out of the binary (SWIFT-NOTES.md).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        // The operator console's HTML templates (issue 31): Hummingbird's own Mustache renderer, one
        // small module with no dependencies (docs/decisions.md, "Why Mustache for the console").
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
    ],
    targets: [
        // libpq, found through pkg-config (Debian/Ubuntu: libpq-dev; macOS: brew libpq).
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // PostgreSQL client over libpq: connections on dedicated threads (the hot path non-blocking on its task), pool, binds, LISTEN/NOTIFY.
        .target(name: "PQ", dependencies: ["CLibPQ"], swiftSettings: strict),
        // Storage-agnostic event-sourcing kit: streams, versions, registry, store and projection protocols.
        .target(name: "EventSourcing", swiftSettings: strict),
        // The operator's handbook, embedded so the console serves the pages of its own version.
        .target(
            name: "ModgudDocs",
            path: "docs",
            // Everything else in docs/ is for readers of the repository.
            exclude: [
                "api.md", "architecture.md", "configuration.md", "decisions.md", "development.md", "features.md", "performance.md", "spec.md", "webauthn.md",
                "guides/coming-from-auth0.md", "guides/device-grant.md", "guides/dpop.md", "guides/first-party-apps.md", "guides/ios-and-android.md", "guides/modgud-client.md",
                "guides/native-sso.md", "guides/passkeys-in-an-app.md", "guides/sign-in-with-apple-and-google.md", "operations/console", "security",
            ],
            sources: ["OperatorDocs.swift"],
            resources: [
                .embedInCode("operations/console.md"), .embedInCode("operations/metrics.md"), .embedInCode("operations/audit-log.md"),
                .embedInCode("operations/retention.md"), .embedInCode("operations/privacy.md"), .embedInCode("operations/production.md"),
                .embedInCode("operations/commands.md"), .embedInCode("operations/backups.md"), .embedInCode("operations/cells.md"), .embedInCode("guides/shared-signals.md"),
                .embedInCode("guides/genuine-apps.md"),
            ],
            swiftSettings: strict
        ),
        // The forward-only SQL migrations, embedded in the binary.
        .target(
            name: "ModgudSchema",
            path: "schema",
            resources: [
                .embedInCode("0001_event_store.sql"),
                .embedInCode("0002_log_statistics.sql"),
                .embedInCode("0003_identity.sql"),
                .embedInCode("0004_mail_and_limits.sql"),
                .embedInCode("0005_passkeys.sql"),
                .embedInCode("0006_stream_age.sql"),
                .embedInCode("0007_rate_limits_unlogged.sql"),
                .embedInCode("0008_subject_keys.sql"),
                .embedInCode("0009_sealed_personal_data.sql"),
                .embedInCode("0010_passkey_provider.sql"),
                .embedInCode("0011_no_plaintext_on_disk.sql"),
                .embedInCode("0012_audit_log.sql"),
                .embedInCode("0013_dpop_replay.sql"),
                .embedInCode("0014_access_token_binding.sql"),
                .embedInCode("0015_shared_signals.sql"),
                .embedInCode("0016_operator_console.sql"),
                .embedInCode("0017_dpop_replay_logged.sql"),
                .embedInCode("0018_settings_acknowledgements.sql"),
                .embedInCode("0019_sign_in_failures.sql"),
                .embedInCode("0020_failures_and_last_sign_in.sql"),
                .embedInCode("0021_first_party_apps.sql"),
                .embedInCode("0022_authorization_code_reuse.sql"),
                .embedInCode("0023_recovery_codes.sql"),
                .embedInCode("0024_client_attestation.sql"),
                .embedInCode("0025_attestation_keys_and_counts.sql"),
                .embedInCode("0026_federated_identities.sql"),
                .embedInCode("0027_durable_rate_limits.sql"),
                .embedInCode("0028_native_sso.sql"),
                .embedInCode("0029_android_attestation_status.sql"),
                .embedInCode("0030_device_authorizations.sql"),
                .embedInCode("0031_token_pruning.sql"),
            ],
            swiftSettings: strict
        ),
        // The pure domain: aggregates with decide/evolve, events, validation. No I/O.
        .target(name: "ModgudDomain", dependencies: ["EventSourcing"], swiftSettings: strict),
        // Actors owning aggregates, inline identity projections, the services above the domain.
        .target(
            name: "ModgudService",
            dependencies: [
                "ModgudDomain", "EventSourcing", "EventStorePostgres", "PQ", "SMTP", "WebAuthn", "ModgudSchema", "TransparencyLog",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: strict
        ),
        // An SMTP client (RFC 5321, STARTTLS, AUTH PLAIN/LOGIN) and MIME rendering.
        .target(
            name: "SMTP",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        // Test support: a real SMTP server (Python aiosmtpd) in a child process.
        .target(name: "MailTestSupport", dependencies: ["AsyncTestSupport"], swiftSettings: strict),
        // Test support: polling with a hang guard instead of sleeps and timing assertions.
        .target(name: "AsyncTestSupport", swiftSettings: strict),
        // The thin HTTP adapter: parse, call one service method, map the result or error.
        .target(
            name: "ModgudHTTP",
            dependencies: [
                "ModgudService", "ModgudDomain", "EventSourcing", "PQ", "TransparencyLog", "ModgudDocs",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            exclude: ["Console/Static/htmx.LICENSE"],
            resources: [
                .embedInCode("openapi.json"),
                .embedInCode("Console/Templates/audit.mustache"),
                .embedInCode("Console/Templates/client-delete.mustache"),
                .embedInCode("Console/Templates/client-form.mustache"),
                .embedInCode("Console/Templates/client-new.mustache"),
                .embedInCode("Console/Templates/client.mustache"),
                .embedInCode("Console/Templates/doc.mustache"),
                .embedInCode("Console/Templates/clients.mustache"),
                .embedInCode("Console/Templates/failures.mustache"),
                .embedInCode("Console/Templates/health.mustache"),
                .embedInCode("Console/Templates/layout.mustache"),
                .embedInCode("Console/Templates/mail.mustache"),
                .embedInCode("Console/Templates/me.mustache"),
                .embedInCode("Console/Templates/message.mustache"),
                .embedInCode("Console/Templates/projections-table.mustache"),
                .embedInCode("Console/Templates/projections.mustache"),
                .embedInCode("Console/Templates/realm-new.mustache"),
                .embedInCode("Console/Templates/realm.mustache"),
                .embedInCode("Console/Templates/realms.mustache"),
                .embedInCode("Console/Templates/sign-in-code.mustache"),
                .embedInCode("Console/Templates/sign-in.mustache"),
                .embedInCode("Console/Templates/signals.mustache"),
                .embedInCode("Console/Templates/user-erase.mustache"),
                .embedInCode("Console/Templates/user.mustache"),
                .embedInCode("Console/Templates/users.mustache"),
                .embedInCode("Console/Static/console.css"),
                .embedInCode("Console/Static/htmx.min.js"),
                .embedInCode("Console/Static/console.js"),
            ],
            swiftSettings: strict
        ),
        // Strict CTAP2 canonical CBOR: decoder with limits, canonical encoder.
        .target(name: "CBOR", swiftSettings: strict),
        // The app developer kit (issue 15): Foundation only, so apps pull in nothing else.
        // ModgudClient uses CryptoKit on Apple platforms; elsewhere swift-crypto (its DPoP key).
        .target(
            name: "ModgudClient",
            dependencies: [.product(name: "Crypto", package: "swift-crypto", condition: .when(platforms: [.linux, .android, .windows, .openbsd]))],
            swiftSettings: strict),
        // WebAuthn relying-party verification: no HTTP, storage or OAuth inside.
        .target(
            name: "WebAuthn",
            dependencies: [
                "CBOR",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strict
        ),
        // A software authenticator producing real attestations and assertions (test support).
        .target(
            name: "WebAuthnTesting",
            dependencies: [
                "WebAuthn", "CBOR",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strict
        ),
        // RFC 9162 Merkle trees, their proofs, and C2SP checkpoints in signed notes. Pure.
        .target(name: "TransparencyLog", dependencies: [.product(name: "Crypto", package: "swift-crypto")], swiftSettings: strict),
        // The event store on PostgreSQL: appends, gap-safe log reads, projection daemon, rebuilds,
        // and the audit log over it.
        .target(
            name: "EventStorePostgres",
            dependencies: [
                "PQ", "EventSourcing", "ModgudSchema", "TransparencyLog",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // A private PostgreSQL cluster in a folder: initdb, start on a free port, stop.
        .target(name: "EmbeddedPostgres", swiftSettings: strict),
        .executableTarget(
            name: "ModgudCLI",
            dependencies: [
                "PQ", "EventSourcing", "EventStorePostgres", "EmbeddedPostgres", "ModgudSchema", "WebAuthn", "ModgudService", "ModgudHTTP",
                "ModgudDomain", "SMTP", "ModgudClient", "TransparencyLog",
                .product(name: "Hummingbird", package: "hummingbird"),
                // The native load client of `modgud bench chains` (NIO is built for Hummingbird already).
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                // For `modgud bench webauthn` only: it signs with the software authenticator.
                "WebAuthnTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                // MODGUD_ATTESTATION_ROOTS_*: PEM roots for the client attester (built for WebAuthn already).
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: strict
        ),
        // Test support: one embedded cluster per test process, a fresh database per test.
        .target(
            name: "PostgresTestSupport",
            dependencies: ["PQ", "EmbeddedPostgres", "EventStorePostgres", "ModgudSchema", "AsyncTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(name: "PQTests", dependencies: ["PQ", "PostgresTestSupport", "AsyncTestSupport", "EmbeddedPostgres"], swiftSettings: strict),
        .testTarget(name: "ModgudDomainTests", dependencies: ["ModgudDomain", "EventSourcing"], swiftSettings: strict),
        .testTarget(
            name: "TransparencyLogTests", dependencies: ["TransparencyLog", .product(name: "Crypto", package: "swift-crypto")], swiftSettings: strict),
        .testTarget(
            name: "ModgudServiceTests",
            dependencies: [
                "ModgudService", "ModgudDomain", "EventSourcing", "EventStorePostgres", "PQ", "PostgresTestSupport", "AsyncTestSupport",
                .product(name: "JWTKit", package: "jwt-kit"), .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ModgudHTTPTests",
            dependencies: [
                "ModgudHTTP", "ModgudService", "ModgudDomain", "PostgresTestSupport", "PQ", "MailTestSupport", "SMTP", "EventSourcing",
                "WebAuthn", "WebAuthnTesting", "EmbeddedPostgres", "EventStorePostgres", "ModgudClient", "AsyncTestSupport", "TransparencyLog",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SMTPTests",
            dependencies: [
                "SMTP", "MailTestSupport", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ], swiftSettings: strict),
        // Runs the built `modgud` executable against real databases (the operator commands).
        .testTarget(
            name: "ModgudCLITests",
            dependencies: [
                "ModgudCLI", "PostgresTestSupport", "PQ", "ModgudSchema", "MailTestSupport", "AsyncTestSupport", "ModgudService", "EventStorePostgres",
                "ModgudClient", "TransparencyLog", "WebAuthn",
            ],
            swiftSettings: strict),
        .testTarget(name: "CBORTests", dependencies: ["CBOR"], swiftSettings: strict),
        .testTarget(
            name: "WebAuthnTests",
            dependencies: ["WebAuthn", "WebAuthnTesting", "CBOR", .product(name: "Crypto", package: "swift-crypto")],
            // Read from the source tree by path (#filePath), not bundled.
            exclude: ["Vectors"],
            swiftSettings: strict
        ),
        .testTarget(name: "EmbeddedPostgresTests", dependencies: ["EmbeddedPostgres", "PQ"], swiftSettings: strict),
        .testTarget(name: "EventSourcingTests", dependencies: ["EventSourcing", "AsyncTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "EventStorePostgresTests",
            dependencies: ["EventStorePostgres", "EventSourcing", "PQ", "PostgresTestSupport", "AsyncTestSupport", "TransparencyLog",
                           .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)

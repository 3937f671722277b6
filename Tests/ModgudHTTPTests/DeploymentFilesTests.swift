import Foundation
import XCTest

/// Issue 10: the deployment files agree with each other, with the code and with docs/configuration.md.
/// This machine has no container engine, so the compose file is parsed and checked, not run;
/// ops/cluster-test runs the same topology on loopback.
final class DeploymentFilesTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func read(_ path: String) throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
    }

    /// YAML → JSON with PyYAML (test tooling), so the file is checked by a real YAML parser.
    func compose() throws -> [String: Any] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
            Self.root.appendingPathComponent("docker-compose.yml").path,
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "docker-compose.yml parses as YAML")
        return try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func settingNames(in text: String) -> Set<String> {
        Set(text.matches(of: /MODGUD_[A-Z_]+[A-Z]/).map { String($0.output) })
    }

    func testComposeHasTheScaledLayoutAndOnlyDocumentedSettings() throws {
        let services = try XCTUnwrap(try compose()["services"] as? [String: [String: Any]])
        let defaultLayout = services.filter { $0.value["profiles"] == nil }
        XCTAssertEqual(Set(defaultLayout.keys), ["postgres", "migrate", "modgud-1", "modgud-2", "lb"])
        XCTAssertEqual(services["migrate"]?["command"] as? [String], ["migrate"])
        for instance in ["modgud-1", "modgud-2"] {
            let service = try XCTUnwrap(services[instance])
            XCTAssertEqual(service["command"] as? [String], ["serve"], instance)
            let health = try XCTUnwrap(service["healthcheck"] as? [String: Any])
            XCTAssertTrue((health["test"] as? [String])?.contains { $0.hasSuffix("/health/ready") } == true, instance)
            let dependsOn = try XCTUnwrap(service["depends_on"] as? [String: [String: String]])
            XCTAssertEqual(dependsOn["migrate"]?["condition"], "service_completed_successfully")
        }
        XCTAssertEqual(services["lb"]?["volumes"] as? [String], ["./ops/docker/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro"])

        let documented = Self.settingNames(in: try read("docs/configuration.md"))
        let inCompose = Self.settingNames(in: try read("docker-compose.yml"))
        XCTAssertTrue(inCompose.isSubset(of: documented), "undocumented: \(inCompose.subtracting(documented).sorted())")
        // The names the code reads are string literals: "MODGUD_…".
        let readers = ["Sources/ModgudCLI/ModgudConfiguration.swift", "Sources/ModgudCLI/GlobalExecutor.swift"]
        let inCode = Set(try readers.flatMap { try read($0).matches(of: /"(MODGUD_[A-Z_]+)"/).map { String($0.output.1) } })
        XCTAssertTrue(inCode.contains("MODGUD_GLOBAL_EXECUTOR"))
        XCTAssertFalse(inCode.isEmpty)
        XCTAssertTrue(inCode.isSubset(of: documented), "read by serve but not in docs/configuration.md: \(inCode.subtracting(documented).sorted())")
    }

    /// Issue 26: the `ha` profile is the default layout on a pg_auto_failover formation, reached
    /// through one multi-host URL that follows the primary, and nothing of the default layout.
    func testComposeHAProfileIsTheSameLayoutOnAFailoverFormation() throws {
        let services = try XCTUnwrap(try compose()["services"] as? [String: [String: Any]])
        let ha = services.filter { ($0.value["profiles"] as? [String]) == ["ha"] }
        XCTAssertEqual(Set(ha.keys), ["pg-monitor", "pg-node-1", "pg-node-2", "migrate-ha", "modgud-ha-1", "modgud-ha-2", "lb-ha"])
        func dependencies(_ name: String) -> Set<String> {
            let dependsOn = services[name]?["depends_on"]
            let direct = (dependsOn as? [String]).map(Set.init) ?? Set((dependsOn as? [String: Any])?.keys.map { $0 } ?? [])
            return direct.reduce(into: direct) { $0.formUnion(dependencies($1)) }
        }
        XCTAssertEqual(dependencies("lb-ha"), Set(ha.keys).subtracting(["lb-ha"]), "lb-ha pulls in the whole formation and only it")
        for node in ["pg-node-1", "pg-node-2"] {
            let command = try XCTUnwrap(services[node]?["command"] as? [String])
            XCTAssertEqual(Array(command.prefix(3)), ["pg_autoctl", "create", "postgres"], node)
            XCTAssertEqual(command.firstIndex(of: "--replication-quorum").map { command[$0 + 1] }, "true", "\(node) is in the synchronous quorum")
        }
        for name in ["migrate-ha", "modgud-ha-1", "modgud-ha-2"] {
            let environment = try XCTUnwrap(services[name]?["environment"] as? [String: Any])
            let url = try XCTUnwrap(environment["MODGUD_DATABASE_URL"] as? String)
            XCTAssertTrue(url.contains("@pg-node-1:5432,pg-node-2:5432/"), "\(name): both nodes in one URL")
            XCTAssertTrue(url.contains("target_session_attrs=read-write"), "\(name): libpq picks the primary")
        }
        let instance = try XCTUnwrap(services["modgud-ha-1"]?["environment"] as? [String: Any])
        let single = try XCTUnwrap(services["modgud-1"]?["environment"] as? [String: Any])
        XCTAssertEqual(Set(instance.keys), Set(single.keys), "the HA instances carry every setting of the default ones")
        for (balancer, instances) in ["lb": ["modgud-1", "modgud-2"], "lb-ha": ["modgud-ha-1", "modgud-ha-2"]] {
            let environment = try XCTUnwrap(services[balancer]?["environment"] as? [String: String])
            XCTAssertEqual([environment["INSTANCE_ONE"], environment["INSTANCE_TWO"]], instances, balancer)
        }
        XCTAssertTrue(try read("ops/docker/haproxy.cfg").contains("\"${INSTANCE_ONE}:8080\""))
    }

    func testBothBalancerConfigurationsCarryTheRollingRestartSettings() throws {
        for path in ["ops/docker/haproxy.cfg", "ops/haproxy.cfg.template"] {
            let text = try read(path)
            for line in ["option httpchk GET /health/ready", "http-check expect status 200", "retry-on conn-failure", "option redispatch", "timeout check 2s"] {
                XCTAssertTrue(text.contains(line), "\(path): \(line)")
            }
            XCTAssertFalse(text.contains("retry-on all-retryable-errors"), "\(path): a token request whose answer was lost must not be retried")
        }
    }

    func testTheOpenAPIDocumentDescribesEveryRoute() throws {
        let document = try XCTUnwrap(
            JSONSerialization.jsonObject(with: Data(try read("Sources/ModgudHTTP/openapi.json").utf8)) as? [String: Any])
        XCTAssertEqual(document["openapi"] as? String, "3.1.0")
        let paths = try XCTUnwrap(document["paths"] as? [String: [String: Any]])
        let documented = Set(paths.flatMap { path, operations in
            operations.keys.map { "\($0.uppercased()) " + path.replacing(/\{[a-z]+\}/, with: "{x}") }
        })
        let routed = Set(RouteTable.all.map { "\($0.method.rawValue) " + $0.template.replacing(/\{[a-z]+\}/, with: "{x}") })
        XCTAssertTrue(routed.isSubset(of: documented), "routes missing from openapi.json: \(routed.subtracting(documented).sorted())")
        for extra in ["GET /metrics", "GET /openapi.json"] { XCTAssertTrue(documented.contains(extra), extra) }
    }
}

import EventSourcing
import XCTest

private struct Renamed: DomainEvent, Equatable {
    static let eventType = "user.renamed"
    static let revision = 2
    var firstName: String
    var lastName: String
}

/// Revision 1 stored one `name` field.
private struct RenamedV1: Decodable, Sendable {
    var name: String
}

final class EventTypeRegistryTests: XCTestCase {
    private func envelope(_ type: String, revision: Int, json: String) -> EventEnvelope {
        EventEnvelope(
            stream: StreamRef(type: "user", key: "1", realm: "r"), streamVersion: 1, type: type, revision: revision,
            payload: Array(json.utf8), metadata: .none)
    }

    func testRegisteredTypeDecodesAndUnknownTypeIsNamed() throws {
        var registry = EventTypeRegistry()
        registry.register(Renamed.self)
        let decoded = try registry.decode(envelope("user.renamed", revision: 2, json: #"{"firstName":"Ada","lastName":"L"}"#))
        XCTAssertEqual(decoded as? Renamed, Renamed(firstName: "Ada", lastName: "L"))
        XCTAssertThrowsError(try registry.decode(envelope("user.vanished", revision: 1, json: "{}"))) { error in
            XCTAssertEqual(error as? EventDecodingError, .unknownType(name: "user.vanished", revision: 1))
        }
        XCTAssertThrowsError(try registry.decode(envelope("user.renamed", revision: 1, json: #"{"name":"x"}"#)),
            "revision 1 is not registered until an upcaster is")
    }

    func testUpcasterReadsAnOldRevisionAsTheCurrentEvent() throws {
        var registry = EventTypeRegistry()
        registry.register(Renamed.self)
        registry.register("user.renamed", revision: 1, as: RenamedV1.self) { old in
            let parts = old.name.split(separator: " ", maxSplits: 1).map(String.init)
            return Renamed(firstName: parts.first ?? "", lastName: parts.count > 1 ? parts[1] : "")
        }
        let decoded = try registry.decode(envelope("user.renamed", revision: 1, json: #"{"name":"Grace Hopper"}"#))
        XCTAssertEqual(decoded as? Renamed, Renamed(firstName: "Grace", lastName: "Hopper"))
        XCTAssertEqual(registry.registeredTypes.map(\.revision), [1, 2])
    }

    func testMalformedPayloadIsATypedError() {
        var registry = EventTypeRegistry()
        registry.register(Renamed.self)
        XCTAssertThrowsError(try registry.decode(envelope("user.renamed", revision: 2, json: #"{"firstName":1}"#))) { error in
            guard case .malformedPayload(let name, 2, _) = error as? EventDecodingError else { return XCTFail("\(error)") }
            XCTAssertEqual(name, "user.renamed")
        }
    }

    func testNewEventEncodingIsDeterministic() throws {
        let a = try NewEvent(Renamed(firstName: "A", lastName: "B"))
        let b = try NewEvent(Renamed(firstName: "A", lastName: "B"))
        XCTAssertEqual(a.payload, b.payload)
        XCTAssertEqual(String(decoding: a.payload, as: UTF8.self), #"{"firstName":"A","lastName":"B"}"#)
        XCTAssertEqual(a.revision, 2)
    }
}

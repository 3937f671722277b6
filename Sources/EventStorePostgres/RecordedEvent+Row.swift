import EventSourcing
import PQ

extension RecordedEvent {
    /// Decodes a row selected with `EventStoreSQL.eventColumns`.
    init(row: PQRow) throws {
        let envelope = EventEnvelope(
            stream: StreamRef(
                id: try row.decode(String.self, at: 2),
                type: try row.decode(String.self, at: 3),
                realm: try row.decode(String.self, at: 5)),
            streamVersion: try row.decode(Int64.self, at: 4),
            type: try row.decode(String.self, at: 6),
            revision: try row.decode(Int.self, at: 7),
            payload: Array(try row.decode(PQJSON.self, at: 8).text.utf8),
            metadata: EventMetadata(
                correlationID: try row.decode(String?.self, at: 9),
                causationID: try row.decode(String?.self, at: 10),
                actor: try row.decode(String?.self, at: 11),
                clientIP: try row.decode(String?.self, at: 12)))
        self.init(
            envelope: envelope,
            position: try row.decode(Int64.self, at: 0),
            transactionID: try row.decode(PQTransactionID.self, at: 1).rawValue,
            recordedAt: try row.decode(at: 13))
    }
}

extension EventMetadata {
    /// The metadata as a JSON object with only the fields that are set.
    var json: PQJSON {
        var fields: [String] = []
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            fields.append("\"\(key)\":\(JSONText.quote(value))")
        }
        add("correlationID", correlationID)
        add("causationID", causationID)
        add("actor", actor)
        add("clientIP", clientIP)
        return PQJSON("{" + fields.joined(separator: ",") + "}")
    }
}

/// JSON string quoting (RFC 8259 section 7) without a full encoder.
enum JSONText {
    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

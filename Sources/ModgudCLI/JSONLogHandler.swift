import Foundation
import Logging

/// Writes each log record as one JSON object per line on standard error (production logs).
struct JSONLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info
    let label: String

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: String] = [
            "time": Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)), "level": "\(event.level)",
            "logger": label, "message": "\(event.message)",
        ]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { _, new in new }) { fields[key] = "\(value)" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(fields) else { return }
        FileHandle.standardError.write(data + Data("\n".utf8))
    }
}

import CLibPQ

/// The rows of a completed statement.
///
/// Owns libpq's `PGresult` (freed on deinit) and decodes cells lazily. A `PGresult` is
/// immutable once returned, so reading it from any thread is safe.
public final class PQResult: @unchecked Sendable {
    private let handle: OpaquePointer
    /// Number of rows returned.
    public let count: Int
    /// Column names, in order.
    public let columns: [String]
    /// Rows affected, for INSERT/UPDATE/DELETE (`PQcmdTuples`), else 0.
    public let affectedRows: Int

    init(taking handle: OpaquePointer) {
        self.handle = handle
        count = Int(PQntuples(handle))
        columns = (0..<PQnfields(handle)).map { String(cString: PQfname(handle, $0)) }
        affectedRows = Int(String(cString: PQcmdTuples(handle))) ?? 0
    }

    deinit {
        PQclear(handle)
    }

    /// The rows, in order.
    public var rows: [PQRow] {
        (0..<count).map { PQRow(result: self, index: $0) }
    }

    /// The first row, if any.
    public var first: PQRow? {
        count > 0 ? PQRow(result: self, index: 0) : nil
    }

    /// The index of a column by name.
    public func columnIndex(_ name: String) -> Int? {
        columns.firstIndex(of: name)
    }

    func withCell<T>(row: Int, column: Int, _ body: (UnsafeBufferPointer<UInt8>?) -> T) -> T {
        if PQgetisnull(handle, Int32(row), Int32(column)) != 0 {
            return body(nil)
        }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        let pointer = PQgetvalue(handle, Int32(row), Int32(column))!
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
            body(UnsafeBufferPointer(start: $0, count: length))
        }
    }
}

/// One row of a `PQResult`.
public struct PQRow: Sendable {
    let result: PQResult
    let index: Int

    /// Decodes the cell at `column` as `T`; NULL decodes only into an optional.
    public func decode<T: PQDecodable>(_ type: T.Type = T.self, at column: Int) throws(PQError) -> T {
        guard column >= 0, column < result.columns.count else {
            throw PQError(.decoding, message: "column index \(column) out of range (\(result.columns.count) columns)")
        }
        let decoded: T? = result.withCell(row: index, column: column) { text in
            if let text { return T.decode(pqText: text) }
            return T.decodeNull()
        }
        guard let decoded else {
            let raw = result.withCell(row: index, column: column) { $0.map { String(decoding: $0, as: UTF8.self) } }
            throw PQError(
                .decoding,
                message: "cannot decode column '\(result.columns[column])' value \(raw.map { "'\($0.prefix(64))'" } ?? "NULL") as \(T.self)"
            )
        }
        return decoded
    }

    /// Decodes the cell of the column named `column` as `T`.
    public func decode<T: PQDecodable>(_ type: T.Type = T.self, _ column: String) throws(PQError) -> T {
        guard let position = result.columnIndex(column) else {
            throw PQError(.decoding, message: "no column named '\(column)'")
        }
        return try decode(type, at: position)
    }
}

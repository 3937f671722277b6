/// One bound parameter of a statement: its type OID and its text representation.
///
/// Every value reaches the server as a `$n` parameter in libpq's text format, never spliced
/// into the SQL text. `oid` 0 lets the server infer the type from context.
public struct PQBind: Sendable, Hashable {
    /// The parameter's type OID, or 0 to let the server infer it.
    public var oid: UInt32
    /// The value in PostgreSQL's text format; `nil` is SQL NULL.
    public var text: String?

    public init(oid: UInt32, text: String?) {
        self.oid = oid
        self.text = text
    }

    /// SQL NULL of an unspecified type.
    public static let null = PQBind(oid: 0, text: nil)
}

/// Type OIDs of the built-in types this client binds and decodes.
public enum PQType {
    public static let bool: UInt32 = 16
    public static let bytea: UInt32 = 17
    public static let int8: UInt32 = 20
    public static let int2: UInt32 = 21
    public static let int4: UInt32 = 23
    public static let text: UInt32 = 25
    public static let float8: UInt32 = 701
    public static let timestamptz: UInt32 = 1184
    public static let uuid: UInt32 = 2950
    public static let jsonb: UInt32 = 3802
    public static let xid8: UInt32 = 5069
    public static let textArray: UInt32 = 1009
    public static let int8Array: UInt32 = 1016
    public static let int4Array: UInt32 = 1007
    public static let jsonbArray: UInt32 = 3807
}

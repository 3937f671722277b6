/// An operation needs the master key and this process was started without one.
public struct MasterKeyMissing: Error, CustomStringConvertible {
    public var description: String { "this operation needs the master key (MODGUD_MASTER_KEY)" }
}

/// The Android attestation status list shipped in the binary (data, not code), in Google's
/// format. Source: the list Google publishes for key attestation (developer.android.com,
/// "Verify hardware-backed key pairs with key attestation", certificate status list), written
/// here by `ops/update-android-status-list` with the date it ran.
///
/// A snapshot without a date holds no entries: it was written on a build machine that cannot
/// reach Google, and an entry not copied from Google's list would refuse a genuine device. In
/// production, import the current list with `modgud attestation status-list import FILE`
/// (docs/guides/genuine-apps.md); an import takes precedence over this snapshot.
enum AndroidAttestationStatusData {
    static let snapshotDate = "none (no entries shipped)"
    static let json = #"{"entries": {}}"#
}

/// The forward-only SQL migrations of the product, embedded in the binary.
///
/// Each file in this folder is listed here in order; a test checks that the list and the
/// folder agree. `modgud migrate` applies them.
public enum ModgudSchema {
    /// One migration file: its name and its SQL text.
    public struct Migration: Sendable {
        public let name: String
        public let sql: String
    }

    /// Every migration, in the order they apply.
    public static let migrations: [Migration] = [
        Migration(name: "0001_event_store.sql", sql: text(PackageResources._001_event_store_sql)),
        Migration(name: "0002_log_statistics.sql", sql: text(PackageResources._002_log_statistics_sql)),
        Migration(name: "0003_identity.sql", sql: text(PackageResources._003_identity_sql)),
        Migration(name: "0004_mail_and_limits.sql", sql: text(PackageResources._004_mail_and_limits_sql)),
        Migration(name: "0005_passkeys.sql", sql: text(PackageResources._005_passkeys_sql)),
        Migration(name: "0006_stream_age.sql", sql: text(PackageResources._006_stream_age_sql)),
        Migration(name: "0007_rate_limits_unlogged.sql", sql: text(PackageResources._007_rate_limits_unlogged_sql)),
        Migration(name: "0008_subject_keys.sql", sql: text(PackageResources._008_subject_keys_sql)),
        Migration(name: "0009_sealed_personal_data.sql", sql: text(PackageResources._009_sealed_personal_data_sql)),
        Migration(name: "0010_passkey_provider.sql", sql: text(PackageResources._010_passkey_provider_sql)),
        Migration(name: "0011_no_plaintext_on_disk.sql", sql: text(PackageResources._011_no_plaintext_on_disk_sql)),
        Migration(name: "0012_audit_log.sql", sql: text(PackageResources._012_audit_log_sql)),
        Migration(name: "0013_dpop_replay.sql", sql: text(PackageResources._013_dpop_replay_sql)),
        Migration(name: "0014_access_token_binding.sql", sql: text(PackageResources._014_access_token_binding_sql)),
        Migration(name: "0015_shared_signals.sql", sql: text(PackageResources._015_shared_signals_sql)),
        Migration(name: "0016_operator_console.sql", sql: text(PackageResources._016_operator_console_sql)),
        Migration(name: "0017_dpop_replay_logged.sql", sql: text(PackageResources._017_dpop_replay_logged_sql)),
        Migration(name: "0018_settings_acknowledgements.sql", sql: text(PackageResources._018_settings_acknowledgements_sql)),
        Migration(name: "0019_sign_in_failures.sql", sql: text(PackageResources._019_sign_in_failures_sql)),
        Migration(name: "0020_failures_and_last_sign_in.sql", sql: text(PackageResources._020_failures_and_last_sign_in_sql)),
        Migration(name: "0021_first_party_apps.sql", sql: text(PackageResources._021_first_party_apps_sql)),
        Migration(name: "0022_authorization_code_reuse.sql", sql: text(PackageResources._022_authorization_code_reuse_sql)),
        Migration(name: "0023_recovery_codes.sql", sql: text(PackageResources._023_recovery_codes_sql)),
        Migration(name: "0024_client_attestation.sql", sql: text(PackageResources._024_client_attestation_sql)),
        Migration(name: "0025_attestation_keys_and_counts.sql", sql: text(PackageResources._025_attestation_keys_and_counts_sql)),
        Migration(name: "0026_federated_identities.sql", sql: text(PackageResources._026_federated_identities_sql)),
        Migration(name: "0027_durable_rate_limits.sql", sql: text(PackageResources._027_durable_rate_limits_sql)),
        Migration(name: "0028_native_sso.sql", sql: text(PackageResources._028_native_sso_sql)),
        Migration(name: "0029_android_attestation_status.sql", sql: text(PackageResources._029_android_attestation_status_sql)),
        Migration(name: "0030_device_authorizations.sql", sql: text(PackageResources._030_device_authorizations_sql)),
        Migration(name: "0031_token_pruning.sql", sql: text(PackageResources._031_token_pruning_sql)),
    ]

    private static func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}

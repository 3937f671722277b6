/// The operator's handbook (docs/operations and the Shared Signals guide), embedded in the
/// binary so that the console links to the pages of its own version (issue 43), offline too.
public enum OperatorDocs {
    /// A shipped page: its path in the repository, its title, and its Markdown.
    public struct Page: Sendable {
        public var path: String
        public var title: String
        public var markdown: String
    }

    /// The pages by the name the console links them by.
    public static let pages: [String: Page] = {
        let sources: [(String, String, [UInt8])] = [
            ("console", "operations/console.md", PackageResources.console_md),
            ("metrics", "operations/metrics.md", PackageResources.metrics_md),
            ("audit-log", "operations/audit-log.md", PackageResources.audit_log_md),
            ("retention", "operations/retention.md", PackageResources.retention_md),
            ("privacy", "operations/privacy.md", PackageResources.privacy_md),
            ("production", "operations/production.md", PackageResources.production_md),
            ("commands", "operations/commands.md", PackageResources.commands_md),
            ("backups", "operations/backups.md", PackageResources.backups_md),
            ("cells", "operations/cells.md", PackageResources.cells_md),
            ("shared-signals", "guides/shared-signals.md", PackageResources.shared_signals_md),
            ("genuine-apps", "guides/genuine-apps.md", PackageResources.genuine_apps_md),
        ]
        var pages: [String: Page] = [:]
        for (name, path, bytes) in sources {
            let text = String(decoding: bytes, as: UTF8.self)
            let heading = text.split(separator: "\n").first { $0.hasPrefix("# ") }.map { String($0.dropFirst(2)) }
            pages[name] = Page(path: "docs/" + path, title: heading ?? path, markdown: text)
        }
        return pages
    }()
}

import Foundation
import Mustache

/// The console's Mustache templates, embedded in the binary and parsed once (issue 31).
///
/// `{{name}}` escapes HTML; nothing in the templates uses the unescaped form, so every value
/// an operator or a user typed reaches the page as text.
enum ConsoleTemplates {
    static let library: MustacheLibrary = {
        let sources: [String: [UInt8]] = [
            "layout": PackageResources.layout_mustache,
            "message": PackageResources.message_mustache,
            "sign-in": PackageResources.sign_in_mustache,
            "sign-in-code": PackageResources.sign_in_code_mustache,
            "health": PackageResources.health_mustache,
            "failures": PackageResources.failures_mustache,
            "realms": PackageResources.realms_mustache,
            "realm": PackageResources.realm_mustache,
            "realm-new": PackageResources.realm_new_mustache,
            "clients": PackageResources.clients_mustache,
            "client": PackageResources.client_mustache,
            "client-new": PackageResources.client_new_mustache,
            "client-form": PackageResources.client_form_mustache,
            "client-delete": PackageResources.client_delete_mustache,
            "users": PackageResources.users_mustache,
            "user": PackageResources.user_mustache,
            "user-erase": PackageResources.user_erase_mustache,
            "audit": PackageResources.audit_mustache,
            "projections": PackageResources.projections_mustache,
            "projections-table": PackageResources.projections_table_mustache,
            "mail": PackageResources.mail_mustache,
            "signals": PackageResources.signals_mustache,
            "me": PackageResources.me_mustache,
            "doc": PackageResources.doc_mustache,
        ]
        var library = MustacheLibrary()
        for (name, bytes) in sources {
            // The templates are part of the binary: one that does not parse is a build defect.
            do {
                try library.register(String(decoding: bytes, as: UTF8.self), named: name)
            } catch {
                fatalError("console template \(name) does not parse: \(error)")
            }
        }
        return library
    }()

    static let stylesheet: [UInt8] = PackageResources.console_css
    static let htmx: [UInt8] = PackageResources.htmx_min_js
    static let script: [UInt8] = PackageResources.console_js

    /// Renders a registered template; an unknown name is a programming error caught by tests.
    /// Lists are tested with Mustache's `empty(list)` transform; the layout's `crumbs` is given a
    /// default so that pages without any test empty, not missing.
    static func render(_ name: String, _ values: [String: Any]) -> String {
        var values = values
        if values["crumbs"] == nil { values["crumbs"] = [[String: String]]() }
        return library.render(values, withTemplate: name) ?? "template \(name) missing"
    }
}

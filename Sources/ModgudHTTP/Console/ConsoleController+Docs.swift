import Hummingbird
import ModgudDocs

/// The operator's handbook in the console (issue 43): the pages the console refers to, as
/// this binary ships them (`OperatorDocs`), so a link always matches the running version.
extension ConsoleController {
    func registerDocs(on router: Router<ModgudRequestContext>) {
        router.get("console/docs") { request, context in
            await page(request, context) { _ in
                ConsolePage(template: "doc", title: "Handbook", values: ["others": Self.docList(except: nil)], section: "docs")
            }
        }
        router.get("console/docs/:page") { request, context in
            await page(request, context) { _ in
                let name = context.parameters.get("page") ?? ""
                guard let found = OperatorDocs.pages[name] else { throw ConsoleRefusal.notFound("page") }
                return ConsolePage(
                    template: "doc", title: found.title,
                    values: ["page": ["path": found.path, "markdown": found.markdown, "others": Self.docList(except: name)] as [String: Any]],
                    section: "docs", crumbs: [("Handbook", "/console/docs")])
            }
        }
    }

    private static func docList(except name: String?) -> [[String: String]] {
        OperatorDocs.pages.filter { $0.key != name }.sorted { $0.value.path < $1.value.path }.map {
            ["name": $0.key, "title": $0.value.title, "path": $0.value.path]
        }
    }
}

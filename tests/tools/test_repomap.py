"""repo_map on a small Python + TypeScript fixture: top-level declarations only, exclusions, caps."""

from __future__ import annotations

from pathlib import Path

from tests.tools.support import make_ctx

from orchestrator.tools.repomap import MAP_CAP, python_symbols, repo_map, script_symbols, wanted_file

PY = '''"""Module."""
import os

LIMIT = 5
name: str = "x"
a = b = 1
obj.attr = 3


class Store(Base, metaclass=Meta):
    size = 3

    def get(self, key):
        def helper():
            pass


def load(path: str, *, strict: bool = False) -> dict:
    return {}


async def fetch(url):
    pass
'''

TS = """import { x } from "./x";
// export function commentedOut() {}
/* export const alsoNot = 1;
export class NotThisEither {} */
export interface Options {
  name: string;
  nested: { deep: number };
}
export type Id = string | number;
const pattern = /[{]+/g;
export const handler = async (req: Request): Promise<Response> => {
  const inner = 1;
  function notTopLevel() {}
  return new Response(`template ${inner} {
export function insideTemplate() {}
`);
};
export default class App extends Base {
  method() {}
}
function helper(a: number,
                b: number): number {
  return a / b;
}
export { helper as publicHelper };
export * from "./other";
declare module "thing";
let counter = 0;
enum Color { Red, Green }
"""


def test_python_symbols_are_top_level_only() -> None:
    assert python_symbols(PY) == [
        (4, "LIMIT"),
        (5, "name: str"),
        (6, "a = b"),
        (10, "class Store(Base, metaclass=Meta)"),
        (18, "def load(path: str, *, strict: bool=False) -> dict"),
        (22, "async def fetch(url)"),
    ]


def test_script_symbols_skip_comments_strings_templates_and_nesting() -> None:
    assert script_symbols(TS) == [
        (5, "export interface Options"),
        (9, "export type Id = string | number"),
        (10, "const pattern = /[{]+/g"),
        (11, "export const handler = async (req: Request): Promise<Response> =>"),
        (18, "export default class App extends Base"),
        (21, "function helper(a: number,"),
        (25, "export { helper as publicHelper }"),
        (26, 'export * from "./other"'),
        (28, "let counter = 0"),
        (29, "enum Color"),
    ]


def test_wanted_files() -> None:
    assert wanted_file("app.ts") and wanted_file("mod.py") and wanted_file("x.mjs") and wanted_file("c.tsx")
    for name in ("test_mod.py", "mod_test.py", "a.test.ts", "a.spec.js", "types.d.ts", "lib.min.js", "conftest.py"):
        assert not wanted_file(name), name
    assert not wanted_file("README.md")


def _fixture(root: Path) -> None:
    files = {
        "src/store.py": PY,
        "src/app.ts": TS,
        "src/util.js": "export function util() {}\n",
        "src/types.d.ts": "export declare function hidden(): void;\n",
        "src/app.test.ts": "export function testOnly() {}\n",
        "src/test_store.py": "def test_x(): pass\n",
        "tests/helpers.py": "def helper(): pass\n",
        "src/__tests__/a.ts": "export const a = 1;\n",
        "node_modules/lib/index.js": "export function vendored() {}\n",
        "vendor/v.py": "def vendored(): pass\n",
        "dist/bundle.js": "export function built() {}\n",
        ".hidden/h.py": "def hidden(): pass\n",
        ".orchestration/runs/r/x.py": "def bookkeeping(): pass\n",
        "src/broken.py": "def broken(:\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


async def test_repo_map_groups_by_file_and_excludes_tests_vendor_hidden_and_build(tmp_path: Path) -> None:
    _fixture(tmp_path)
    result = await repo_map(make_ctx(tmp_path), {})
    assert result.kind == "success"
    text = result.data["map"]
    headers = [line for line in text.splitlines() if not line.startswith("  ")]
    assert headers == ["src/app.ts", "src/broken.py", "src/store.py", "src/util.js"]
    assert "  1: export function util()\n" in text
    assert "  10: class Store(Base, metaclass=Meta)\n" in text
    assert "could not be parsed" in text
    for absent in ("testOnly", "test_x", "vendored", "built", "hidden", "bookkeeping", "helper():", "insideTemplate"):
        assert absent not in text, absent
    assert result.data["files"] == 4 and result.data["truncated"] is False
    assert result.data["symbols"] == sum(line.startswith("  ") for line in text.splitlines())


async def test_repo_map_path_narrows_to_a_folder_or_a_file(tmp_path: Path) -> None:
    _fixture(tmp_path)
    ctx = make_ctx(tmp_path)
    single = await repo_map(ctx, {"path": "src/util.js"})
    assert single.data["map"] == "src/util.js\n  1: export function util()\n"
    assert (await repo_map(ctx, {"path": "README.md"})).kind in ("not_found", "invalid_arguments")
    assert (await repo_map(ctx, {"path": ".orchestration"})).kind == "permission_denied"
    assert (await repo_map(ctx, {"path": "../"})).kind == "invalid_arguments"


async def test_repo_map_is_capped_at_a_file_boundary(tmp_path: Path) -> None:
    body = "".join(
        f"export function function_with_a_rather_long_name_{i:03}(argument: number) {{}}\n" for i in range(50)
    )
    for index in range(40):
        (tmp_path / f"m{index:02}.ts").write_text(body)
    result = await repo_map(make_ctx(tmp_path), {})
    assert result.data["truncated"] is True
    assert len(result.data["map"]) <= MAP_CAP and result.data["map"].endswith("\n")
    assert result.data["files"] < 40


def test_script_scanner_recovers_from_jsx_text_and_keeps_templates_whole() -> None:
    source = (
        "export function App() {\n"
        "  return <p>Don't stop</p>;\n"
        "}\n"
        "const ratio = width / 2 / 3;\n"
        'export function close() { return "}" }\n'
        "const label = `${ {a: 1}.a } }`;\n"
        "export const last = () => 1;\n"
    )
    assert script_symbols(source) == [
        (1, "export function App()"),
        (4, "const ratio = width / 2 / 3"),
        (5, "export function close()"),
        (6, "const label = `${ {a: 1}.a } }`"),
        (7, "export const last = () => 1"),
    ]

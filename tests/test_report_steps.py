"""The report writer is written as named steps: no function of ``figures`` is over 150 lines."""

import ast
import pathlib

FIGURES = pathlib.Path(__file__).resolve().parents[1] / "figures"
LIMIT = 150


def _long_functions():
    out = []
    for path in sorted(FIGURES.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > LIMIT:
                    out.append(f"{path.name}:{node.name} ({n} lines)")
    return out


def test_no_function_of_figures_over_150_lines():
    assert _long_functions() == []


def test_the_length_check_sees_the_report_writer():
    # the walk finds the module and its functions (a check that reads nothing would pass any tree)
    names = {n.name for n in ast.walk(ast.parse((FIGURES / "report.py").read_text())) if isinstance(n, ast.FunctionDef)}
    assert {"write_report", "_check_section", "_record_row", "_context"} <= names

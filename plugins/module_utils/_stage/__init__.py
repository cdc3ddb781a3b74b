# Copyright: (c) specdec.bench contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stage engine: the benchmark harness (result schema, run, builtin load generator, HTTP/SSE reader, sglang client)."""

"""The rescoring study tool reads a replay's stored rows as the candidate generator wrote them: the fixed fusion it
recomputes gives the stored order, and an edit moves only what it names."""

from __future__ import annotations

import re

import numpy as np

from lab.localizer.rescore import COLUMN, CachedCandidates, FusionEdit, Rescorer
from semantica.stores.localizer.features import CandidateConfig, CandidateGenerator
from semantica.stores.localizer.table import LocalizerTableBuilder
from serving.localizer.stage import LocalizerModels

# koajs/koa at 5b076c5a31's parent: test-helpers/context.js whole, lib/response.js's get() and has()
KOA_TEST_HELPER = """
'use strict'

const Stream = require('stream')
const Koa = require('../lib/application')

module.exports = (req, res, app) => {
  const socket = new Stream.Duplex()
  req = Object.assign({ headers: {}, socket }, Stream.Readable.prototype, req)
  res = Object.assign({ _headers: {}, socket }, Stream.Writable.prototype, res)
  req.socket.remoteAddress = req.socket.remoteAddress || '127.0.0.1'
  app = app || new Koa()
  res.getHeader = k => res._headers[k.toLowerCase()]
  res.setHeader = (k, v) => { res._headers[k.toLowerCase()] = v }
  res.removeHeader = (k, v) => delete res._headers[k.toLowerCase()]
  return app.createContext(req, res)
}

module.exports.request = (req, res, app) => module.exports(req, res, app).request

module.exports.response = (req, res, app) => module.exports(req, res, app).response
"""
KOA_RESPONSE = """'use strict'

module.exports = {
  /**
   * Return response header.
   *
   * Examples:
   *
   *     this.get('Content-Type');
   *     // => "text/plain"
   *
   *     this.get('content-type');
   *     // => "text/plain"
   *
   * @param {String} field
   * @return {String}
   * @api public
   */

  get (field) {
    return this.header[field.toLowerCase()] || ''
  },

  /**
   * Returns true if the header identified by name is currently set in the outgoing headers.
   * The header name matching is case-insensitive.
   *
   * Examples:
   *
   *     this.has('Content-Type');
   *     // => true
   *
   *     this.get('content-type');
   *     // => true
   *
   * @param {String} field
   * @return {boolean}
   * @api public
   */

  has (field) {
    return typeof this.res.hasHeader === 'function'
      ? this.res.hasHeader(field)
      // Node < 7.7
      : field.toLowerCase() in this.headers
  },
}
"""
KOA_TEST = """'use strict'

const context = require('../../test-helpers/context')

describe('ctx.response.get(name)', () => {
  it('should get a field value, case insensitive', () => {
    const ctx = context()
    ctx.set('X-Foo', 'bar')
    assert.strictEqual(ctx.response.get('x-FOO'), 'bar')
  })
})
"""
KOA_QUERY = "ctx.response.get - use .getHeader in lib/response.js (#1392)"
HELPER = re.compile(r"(^|/)test-[^/]+/")


def _stored(tmp_path) -> CachedCandidates:
    """The candidates of a real koa query, stored as `mswe_replay` stores them."""
    table = LocalizerTableBuilder().build({"lib/response.js": KOA_RESPONSE, "test-helpers/context.js": KOA_TEST_HELPER,
                                           "__tests__/response/get.test.js": KOA_TEST})
    cands = CandidateGenerator(CandidateConfig()).build(table, KOA_QUERY)
    store = tmp_path / "localizer-candidates"
    store.mkdir()
    np.savez(store / "koajs__koa-5b076c5a31-0123.npz", files=np.array(cands.files, dtype=str),
             file_features=cands.file_features, file_fusion=cands.file_fusion)
    loaded = CachedCandidates.load(tmp_path, "koajs__koa-5b076c5a31")
    assert loaded is not None and loaded.files == cands.files
    return loaded


def test_the_recomputed_fusion_is_the_generator_s(tmp_path) -> None:
    cands = _stored(tmp_path)
    rescorer = Rescorer(LocalizerModels("models/localizer-history"), CandidateConfig())
    assert rescorer.fusion_reproduced(cands)
    assert cands.features[cands.files.index("lib/response.js"), COLUMN["path_named"]] == 1.0  # the boosted branch


def test_a_test_rule_damps_only_the_paths_it_names(tmp_path) -> None:
    cands = _stored(tmp_path)
    rescorer = Rescorer(LocalizerModels("models/localizer-history"), CandidateConfig())
    before = rescorer.fusion(cands.features, FusionEdit())
    edit = FusionEdit(test_rule=HELPER)
    after = rescorer.fusion(rescorer.edited_rows(cands, edit), edit)
    helper = cands.files.index("test-helpers/context.js")
    assert before[helper] > 0 and after[helper] == before[helper] * CandidateConfig().test_factor
    assert np.delete(after, helper).tolist() == np.delete(before, helper).tolist()
    assert set(rescorer.order(cands, edit)) == set(cands.files)
    assert CachedCandidates.load(tmp_path, "koajs__koa-unreplayed") is None

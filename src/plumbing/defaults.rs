//! Which tag a column's DEFAULT draws from, read from the catalogs alone.
//!
//! A DEFAULT that calls a function records a dependency on it (`pg_depend`, from its
//! `pg_attrdef` row); the DEFAULTs that depend on one of pg_seqgen's functions are read there,
//! and their stored expression (`pg_attrdef.adbin`) is walked for a call of one of those
//! functions whose first argument is a text constant: the tag. No relation is opened or locked
//! (`pg_get_expr` would lock each table), so the cold path of an error never waits behind a
//! lock someone holds on a table.
//!
//! Used by `seqgen_column_tag` (like `pg_get_serial_sequence`) and by the error for an unknown
//! tag: a tag that a column's DEFAULT names was here, and the column may hold its values.

use std::ffi::{c_void, CString};

use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgList;

use crate::plumbing::error::{Result, SeqgenError};

/// A column whose DEFAULT draws from a tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drawing {
    /// The table, as `regclass` prints it (schema-qualified when not on the search path).
    pub table: String,
    /// The column's name.
    pub column: String,
    /// The tag: the text constant given as the first argument.
    pub tag: String,
    /// The pg_seqgen function called (`seqgen_next`, `seqgen_order_no`, ...).
    pub function: String,
    /// The DEFAULT is this call and nothing else, with the tag its only argument
    /// (`seqgen_next('order')`): what `seqgen_adopt` sets.
    pub whole: bool,
}

const EXTENSION_FUNCTIONS: &str = "SELECT e.objid FROM pg_catalog.pg_depend e \
     WHERE e.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass \
       AND e.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass \
       AND e.deptype OPERATOR(pg_catalog.=) 'e' \
       AND e.refobjid OPERATOR(pg_catalog.=) (SELECT x.oid FROM pg_catalog.pg_extension x \
                                              WHERE x.extname OPERATOR(pg_catalog.=) 'pg_seqgen')";

/// The columns whose DEFAULT draws from a tag: every such column of the database, or (with
/// `only`) the one column (table, attribute number). In the order of table and column name.
pub fn drawing_columns(only: Option<(pg_sys::Oid, i16)>) -> Result<Vec<Drawing>> {
    let (rel, att) = only.map_or((None, None), |(r, a)| (Some(r), Some(a)));
    let rows: Vec<(String, String, String)> = Spi::connect(|c| {
        let query = format!(
            "SELECT ad.adrelid::pg_catalog.regclass::pg_catalog.text, a.attname::pg_catalog.text, \
                    ad.adbin::pg_catalog.text \
               FROM pg_catalog.pg_attrdef ad \
               JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) ad.adrelid \
                    AND a.attnum OPERATOR(pg_catalog.=) ad.adnum AND NOT a.attisdropped \
              WHERE ($1 IS NULL OR (ad.adrelid OPERATOR(pg_catalog.=) $1 AND ad.adnum OPERATOR(pg_catalog.=) $2)) \
                AND EXISTS (SELECT FROM pg_catalog.pg_depend d \
                             WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass \
                               AND d.objid OPERATOR(pg_catalog.=) ad.oid \
                               AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass \
                               AND d.refobjid OPERATOR(pg_catalog.=) ANY (ARRAY({EXTENSION_FUNCTIONS}))) \
              ORDER BY 1, 2"
        );
        c.select(&query, None, &[rel.into(), att.into()])?
            .map(|r| Ok((r.get(1)?.unwrap_or_default(), r.get(2)?.unwrap_or_default(), r.get(3)?.unwrap_or_default())))
            .collect::<std::result::Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(|e| SeqgenError::Internal(e.to_string()))?;
    if rows.is_empty() {
        return Ok(vec![]);
    }
    let functions: Vec<pg_sys::Oid> = Spi::connect(|c| {
        c.select(EXTENSION_FUNCTIONS, None, &[])?
            .map(|r| Ok(r.get::<pg_sys::Oid>(1)?.unwrap_or(pg_sys::InvalidOid)))
            .collect::<std::result::Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(|e| SeqgenError::Internal(e.to_string()))?;
    let mut found = vec![];
    for (table, column, adbin) in rows {
        for (tag, function, whole) in calls_with_a_tag(&adbin, &functions) {
            found.push(Drawing { table: table.clone(), column: column.clone(), tag, function, whole });
        }
    }
    Ok(found)
}

/// The columns whose DEFAULT draws from `tag`.
pub fn columns_drawing_from(tag: &str) -> Result<Vec<Drawing>> {
    Ok(drawing_columns(None)?.into_iter().filter(|d| d.tag == tag).collect())
}

struct Walk<'a> {
    functions: &'a [pg_sys::Oid],
    root: *mut pg_sys::Node,
    found: Vec<(String, String, bool)>,
}

/// The calls of `functions` in the stored expression `adbin` whose first argument is a text
/// constant (seen through a binary-compatible cast, `'o'::varchar`): (tag, function name,
/// whether the expression is that call alone with one argument).
fn calls_with_a_tag(adbin: &str, functions: &[pg_sys::Oid]) -> Vec<(String, String, bool)> {
    let Ok(text) = CString::new(adbin) else { return vec![] };
    unsafe {
        let root = pg_sys::stringToNode(text.as_ptr()) as *mut pg_sys::Node;
        let mut walk = Walk { functions, root, found: vec![] };
        visit(root, &mut walk as *mut Walk as *mut c_void);
        walk.found
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn visit(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    let walk = &mut *(context as *mut Walk);
    if (*node).type_ == pg_sys::NodeTag::T_FuncExpr {
        let f = node as *mut pg_sys::FuncExpr;
        if walk.functions.contains(&(*f).funcid) {
            let args = PgList::<pg_sys::Node>::from_pg((*f).args);
            if let Some(tag) = args.get_ptr(0).and_then(|a| text_constant(a)) {
                let name = pg_sys::get_func_name((*f).funcid);
                let name = if name.is_null() {
                    String::new()
                } else {
                    std::ffi::CStr::from_ptr(name).to_string_lossy().into_owned()
                };
                walk.found.push((tag, name, node == walk.root && args.len() == 1));
            }
        }
    }
    pg_sys::expression_tree_walker(node, Some(visit), context)
}

/// The value of a non-NULL text (or varchar) constant, seen through binary-compatible casts.
unsafe fn text_constant(mut node: *mut pg_sys::Node) -> Option<String> {
    while !node.is_null() && (*node).type_ == pg_sys::NodeTag::T_RelabelType {
        node = (*(node as *mut pg_sys::RelabelType)).arg as *mut pg_sys::Node;
    }
    if node.is_null() || (*node).type_ != pg_sys::NodeTag::T_Const {
        return None;
    }
    let c = node as *mut pg_sys::Const;
    if (*c).constisnull || !matches!((*c).consttype, pg_sys::TEXTOID | pg_sys::VARCHAROID) {
        return None;
    }
    String::from_datum((*c).constvalue, false)
}

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
use crate::plumbing::session;

/// A column whose DEFAULT draws from a tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drawing {
    /// The table's oid.
    pub oid: pg_sys::Oid,
    /// The table, schema-qualified and quoted where needed (`public.orders`).
    pub table: String,
    /// The column's name.
    pub column: String,
    /// The tag: the text constant given as the `biz_tag` argument.
    pub tag: String,
    /// The pg_seqgen function called (`seqgen_next`, `seqgen_order_no`, ...).
    pub function: String,
    /// The DEFAULT is this call and nothing else, with the tag its only argument
    /// (`seqgen_next('order')`): what `seqgen_adopt` sets.
    pub whole: bool,
    /// The table is a plain or partitioned table (not a view or a foreign table).
    pub is_table: bool,
    /// The table's parent, when it is a partition or an inheritance child (its DEFAULT is a
    /// copy of the parent's).
    pub parent: Option<pg_sys::Oid>,
}

/// pg_seqgen's functions that take a tag: those whose first parameter is `biz_tag`.
const TAG_FUNCTIONS: &str = "SELECT p.oid FROM pg_catalog.pg_proc p \
     JOIN pg_catalog.pg_depend e ON e.objid OPERATOR(pg_catalog.=) p.oid \
      AND e.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass \
      AND e.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass \
      AND e.deptype OPERATOR(pg_catalog.=) 'e' \
      AND e.refobjid OPERATOR(pg_catalog.=) (SELECT x.oid FROM pg_catalog.pg_extension x \
                                             WHERE x.extname OPERATOR(pg_catalog.=) 'pg_seqgen') \
     WHERE p.proargnames[1] OPERATOR(pg_catalog.=) 'biz_tag'";

/// The columns whose DEFAULT draws from a tag: every such column of the database, or (with
/// `only`) the one column (table, attribute number). In the order of table and column name.
/// Generated columns are not DEFAULTs, and are left out.
pub fn drawing_columns(only: Option<(pg_sys::Oid, i16)>) -> Result<Vec<Drawing>> {
    type Row = (pg_sys::Oid, String, String, String, bool, Option<pg_sys::Oid>);
    let (rel, att) = only.map_or((None, None), |(r, a)| (Some(r), Some(a)));
    let rows: Vec<Row> = Spi::connect(|c| {
        let query = format!(
            "SELECT ad.adrelid, pg_catalog.format('%I.%I', n.nspname, r.relname), a.attname::pg_catalog.text, \
                    ad.adbin::pg_catalog.text, r.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p']::pg_catalog.\"char\"[]), \
                    (SELECT i.inhparent FROM pg_catalog.pg_inherits i WHERE i.inhrelid OPERATOR(pg_catalog.=) ad.adrelid \
                      ORDER BY i.inhseqno LIMIT 1) \
               FROM pg_catalog.pg_attrdef ad \
               JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) ad.adrelid \
                    AND a.attnum OPERATOR(pg_catalog.=) ad.adnum AND NOT a.attisdropped \
                    AND a.attgenerated OPERATOR(pg_catalog.=) '' \
               JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) ad.adrelid \
               JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) r.relnamespace \
              WHERE ($1 IS NULL OR (ad.adrelid OPERATOR(pg_catalog.=) $1 AND ad.adnum OPERATOR(pg_catalog.=) $2)) \
                AND EXISTS (SELECT FROM pg_catalog.pg_depend d \
                             WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass \
                               AND d.objid OPERATOR(pg_catalog.=) ad.oid \
                               AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass \
                               AND d.refobjid OPERATOR(pg_catalog.=) ANY (ARRAY({TAG_FUNCTIONS}))) \
              ORDER BY 2, 3"
        );
        c.select(&query, None, &[rel.into(), att.into()])?
            .map(|r| {
                Ok((
                    r.get(1)?.unwrap_or(pg_sys::InvalidOid),
                    r.get(2)?.unwrap_or_default(),
                    r.get(3)?.unwrap_or_default(),
                    r.get(4)?.unwrap_or_default(),
                    r.get(5)?.unwrap_or(false),
                    r.get(6)?,
                ))
            })
            .collect::<std::result::Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(|e| SeqgenError::Internal(e.to_string()))?;
    if rows.is_empty() {
        return Ok(vec![]);
    }
    let functions: Vec<pg_sys::Oid> = Spi::connect(|c| {
        c.select(TAG_FUNCTIONS, None, &[])?
            .map(|r| Ok(r.get::<pg_sys::Oid>(1)?.unwrap_or(pg_sys::InvalidOid)))
            .collect::<std::result::Result<Vec<_>, pgrx::spi::Error>>()
    })
    .map_err(|e| SeqgenError::Internal(e.to_string()))?;
    let mut found = vec![];
    for (oid, table, column, adbin, is_table, parent) in rows {
        for (tag, function, whole) in calls_with_a_tag(&adbin, &functions) {
            found.push(Drawing {
                oid,
                table: table.clone(),
                column: column.clone(),
                tag,
                function,
                whole,
                is_table,
                parent,
            });
        }
    }
    Ok(found)
}

/// The columns whose DEFAULT draws from `tag`, each once; a partition's or inheritance child's
/// column is left out when its parent's draws from the tag too (its DEFAULT is the parent's
/// copy: adopting the parent covers it). Any error on the way (a catalog the role may not read,
/// a name in an encoding Rust cannot read, a cancel) gives no columns: the caller's own error
/// stands.
pub fn columns_drawing_from(tag: &str) -> Vec<Drawing> {
    let found = session::subtransaction(|| drawing_columns(None)).unwrap_or_default();
    let mut mine: Vec<Drawing> = found.into_iter().filter(|d| d.tag == tag).collect();
    mine.dedup_by(|a, b| a.oid == b.oid && a.column == b.column);
    let tables: Vec<pg_sys::Oid> = mine.iter().map(|d| d.oid).collect();
    mine.retain(|d| !d.parent.is_some_and(|p| tables.contains(&p)));
    mine
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
            if let Some(tag) = tag_argument(&args) {
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

/// The constant given for the first parameter (`biz_tag`): the first argument, or the one
/// named `biz_tag => ...` (a stored expression keeps named arguments in the order written).
unsafe fn tag_argument(args: &PgList<pg_sys::Node>) -> Option<String> {
    for (i, a) in args.iter_ptr().enumerate() {
        if !a.is_null() && (*a).type_ == pg_sys::NodeTag::T_NamedArgExpr {
            let named = a as *mut pg_sys::NamedArgExpr;
            if (*named).argnumber == 0 {
                return text_constant((*named).arg as *mut pg_sys::Node);
            }
        } else if i == 0 {
            return text_constant(a);
        }
    }
    None
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

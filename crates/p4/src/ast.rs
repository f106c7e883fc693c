//! The syntax tree of a P4-16 program, as written.
//!
//! The parser ([`crate::parse`]) builds it; the checker
//! ([`crate::check`]) resolves names and types over it. Every node that
//! can be the subject of an error carries a [`Span`]. Nothing here is
//! v1model-specific: the architecture is ordinary declarations
//! (`extern`, `parser`/`control` types, `package`) read from sluice's
//! built-in `v1model.p4`.

use crate::diag::Span;

/// A name as written, with where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// `@name(...)`-style annotations. The body is kept as the raw tokens'
/// text (string literals unquoted) because only a few are interpreted
/// (`@name`, `@priority`, `@hidden`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Annotation {
    pub name: Ident,
    pub args: Vec<String>,
    pub span: Span,
}

/// A whole program after preprocessing: the built-in declarations
/// followed by the user's.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub decls: Vec<Decl>,
}

#[derive(Clone, Debug)]
pub enum Decl {
    Const(ConstDecl),
    /// `typedef T N;` (`new_type: false`) or `type T N;` (`new_type: true`).
    Typedef {
        annotations: Vec<Annotation>,
        ty: Type,
        name: Ident,
        new_type: bool,
        span: Span,
    },
    /// `header`, `header_union` and `struct`.
    Aggregate(AggregateDecl),
    Enum(EnumDecl),
    /// `error { A, B }` — adds members to the one `error` type.
    Error {
        members: Vec<Ident>,
        span: Span,
    },
    /// `match_kind { exact, ternary }`.
    MatchKind {
        members: Vec<Ident>,
        span: Span,
    },
    /// `extern Name<T> { Name(...); R method<U>(...); }`.
    ExternObject(ExternObjectDecl),
    /// `extern R name<T>(...);`
    ExternFunction(FunctionProto),
    /// `parser Name<T>(...);` — a parser type (no body).
    ParserType(TypeDeclProto),
    /// `control Name<T>(...);` — a control type (no body).
    ControlType(TypeDeclProto),
    /// `package Name<T>(...);`
    Package(TypeDeclProto),
    Parser(ParserDecl),
    Control(ControlDecl),
    Action(ActionDecl),
    Function(FunctionDecl),
    /// `Type(args) name;` at top level (`V1Switch(...) main;`).
    Instance(Instantiation),
}

#[derive(Clone, Debug)]
pub struct ConstDecl {
    pub annotations: Vec<Annotation>,
    pub ty: Type,
    pub name: Ident,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregateKind {
    Header,
    HeaderUnion,
    Struct,
}

#[derive(Clone, Debug)]
pub struct AggregateDecl {
    pub annotations: Vec<Annotation>,
    pub kind: AggregateKind,
    pub name: Ident,
    pub fields: Vec<FieldDecl>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct FieldDecl {
    pub annotations: Vec<Annotation>,
    pub ty: Type,
    pub name: Ident,
    pub span: Span,
}

/// `enum E { A, B }` or `enum bit<8> E { A = 1, B = 2 }`.
#[derive(Clone, Debug)]
pub struct EnumDecl {
    pub annotations: Vec<Annotation>,
    pub underlying: Option<Type>,
    pub name: Ident,
    pub members: Vec<(Ident, Option<Expr>)>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct ExternObjectDecl {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub type_params: Vec<Ident>,
    /// Constructors have `ret: None` and the extern's name.
    pub methods: Vec<FunctionProto>,
    pub span: Span,
}

/// A function or method signature without a body.
#[derive(Clone, Debug)]
pub struct FunctionProto {
    pub annotations: Vec<Annotation>,
    /// `None` for a constructor.
    pub ret: Option<Type>,
    pub name: Ident,
    pub type_params: Vec<Ident>,
    pub params: Vec<Param>,
    /// `abstract R name(...)` in an extern.
    pub is_abstract: bool,
    pub span: Span,
}

/// `parser P<H>(packet_in b, out H h);` and the like.
#[derive(Clone, Debug)]
pub struct TypeDeclProto {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub type_params: Vec<Ident>,
    pub params: Vec<Param>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// No direction: a compile-time (constructor or action-data) value.
    None,
    In,
    Out,
    InOut,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub annotations: Vec<Annotation>,
    pub dir: Direction,
    pub ty: Type,
    pub name: Ident,
    /// `= value` (optional parameters with defaults).
    pub default: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct ParserDecl {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub type_params: Vec<Ident>,
    pub params: Vec<Param>,
    /// `parser P(...)(constructor params)`.
    pub ctor_params: Vec<Param>,
    pub locals: Vec<Local>,
    pub states: Vec<ParserState>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct ParserState {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub body: Vec<Stmt>,
    /// `None` when the state has no `transition` (it then rejects, as
    /// the spec says a state without one goes to `reject`).
    pub transition: Option<Transition>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum Transition {
    /// `transition next;`
    Direct(Ident),
    /// `transition select(e, ...) { keys: next; ... }`
    Select { exprs: Vec<Expr>, cases: Vec<SelectCase>, span: Span },
}

#[derive(Clone, Debug)]
pub struct SelectCase {
    /// One keyset per select expression; a single `default`/`_` matches
    /// a whole tuple.
    pub keys: Vec<Keyset>,
    pub next: Ident,
    pub span: Span,
}

/// A set of values in a `select` case or a table entry's key.
#[derive(Clone, Debug)]
pub enum Keyset {
    /// A value.
    Expr(Expr),
    /// `value &&& mask`.
    Mask(Expr, Expr),
    /// `lo .. hi` (inclusive).
    Range(Expr, Expr),
    /// `default`.
    Default(Span),
    /// `_`.
    DontCare(Span),
}

#[derive(Clone, Debug)]
pub struct ControlDecl {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub type_params: Vec<Ident>,
    pub params: Vec<Param>,
    pub ctor_params: Vec<Param>,
    pub locals: Vec<Local>,
    pub apply: Block,
    pub span: Span,
}

/// Declarations local to a parser or a control.
#[derive(Clone, Debug)]
pub enum Local {
    Const(ConstDecl),
    Var(VarDecl),
    Instance(Instantiation),
    Action(ActionDecl),
    Table(TableDecl),
    /// A `value_set` in a parser (kept so it can be refused by name).
    ValueSet {
        name: Ident,
        span: Span,
    },
}

#[derive(Clone, Debug)]
pub struct VarDecl {
    pub annotations: Vec<Annotation>,
    pub ty: Type,
    pub name: Ident,
    pub init: Option<Expr>,
    pub span: Span,
}

/// `Type<Args>(ctor args) name;` — an extern, parser, control or package
/// instance.
#[derive(Clone, Debug)]
pub struct Instantiation {
    pub annotations: Vec<Annotation>,
    pub ty: Type,
    pub args: Vec<Arg>,
    pub name: Ident,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct ActionDecl {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub params: Vec<Param>,
    pub body: Block,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct FunctionDecl {
    pub annotations: Vec<Annotation>,
    pub ret: Type,
    pub name: Ident,
    pub type_params: Vec<Ident>,
    pub params: Vec<Param>,
    pub body: Block,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct TableDecl {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub props: Vec<TableProp>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum TableProp {
    Key {
        elems: Vec<KeyElem>,
        span: Span,
    },
    Actions {
        actions: Vec<ActionRef>,
        span: Span,
    },
    DefaultAction {
        action: ActionRef,
        is_const: bool,
        span: Span,
    },
    Entries {
        entries: Vec<TableEntry>,
        is_const: bool,
        span: Span,
    },
    /// `size`, `implementation`, `counters`, `meters`, `support_timeout`
    /// and any other `name = expr;`.
    Other {
        annotations: Vec<Annotation>,
        name: Ident,
        is_const: bool,
        value: Expr,
        span: Span,
    },
}

#[derive(Clone, Debug)]
pub struct KeyElem {
    pub annotations: Vec<Annotation>,
    pub expr: Expr,
    pub match_kind: Ident,
    pub span: Span,
}

/// An action named in a table, maybe with some arguments bound
/// (`a(1)` in `default_action`, or the directionful ones in `actions`).
#[derive(Clone, Debug)]
pub struct ActionRef {
    pub annotations: Vec<Annotation>,
    pub name: Ident,
    pub args: Vec<Arg>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct TableEntry {
    pub annotations: Vec<Annotation>,
    /// `priority = N :` (P4-16 1.2.2) when written.
    pub priority: Option<Expr>,
    /// One keyset per key element (a single `_`/`default` may stand for
    /// all when there is one key element).
    pub keys: Vec<Keyset>,
    pub action: ActionRef,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum Stmt {
    /// `lhs = rhs;` and, with `op`, `lhs op= rhs;`.
    Assign {
        lhs: Expr,
        op: Option<BinOp>,
        rhs: Expr,
        span: Span,
    },
    /// A call used as a statement (`t.apply();`, `b.extract(h.x);`).
    Call(Expr),
    If {
        cond: Expr,
        then: Box<Stmt>,
        otherwise: Option<Box<Stmt>>,
        span: Span,
    },
    Block(Block),
    Exit(Span),
    Return(Option<Expr>, Span),
    Switch {
        expr: Expr,
        cases: Vec<SwitchCase>,
        span: Span,
    },
    Var(VarDecl),
    Const(ConstDecl),
    Empty(Span),
}

#[derive(Clone, Debug)]
pub struct SwitchCase {
    pub label: SwitchLabel,
    /// `None` falls through to the next case's body (`a: b: { ... }`).
    pub body: Option<Block>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum SwitchLabel {
    Default(Span),
    /// An action name (switch on `action_run`) or an expression
    /// (switch on a value).
    Expr(Expr),
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    /// An integer literal. `width` is `Some((signed, bits))` for `8w5`
    /// or `4s-1` style literals; `None` for an arbitrary-precision
    /// `int` literal. `value` is the magnitude's digits parsed exactly
    /// (the sign is a unary minus around it).
    Int {
        value: BigValue,
        width: Option<(bool, u32)>,
    },
    Bool(bool),
    Str(String),
    /// A name; `.name` (top-level scope) is `dot_prefix: true`.
    Name {
        id: Ident,
        dot_prefix: bool,
    },
    /// `e.member` (also `error.X`, `Enum.X`, `hdr.isValid` before the
    /// call).
    Member(Box<Expr>, Ident),
    /// `e[i]` (header stack element).
    Index(Box<Expr>, Box<Expr>),
    /// `e[hi:lo]`.
    Slice(Box<Expr>, Box<Expr>, Box<Expr>),
    Call {
        func: Box<Expr>,
        type_args: Vec<Type>,
        args: Vec<Arg>,
    },
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`.
    Mux(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `(T) e`.
    Cast(Box<Type>, Box<Expr>),
    /// `{ a, b }` — a tuple, or a struct/header initialiser by position.
    List(Vec<Expr>),
    /// `{ a = 1, b = 2 }`.
    StructInit(Vec<(Ident, Expr)>),
    /// `_` as an expression (an `out` argument not used).
    DontCare,
    /// `T.minSizeInBits()` style and `Type.member` where the left side
    /// must be a type (`bit<8>` cannot be an expression): kept as a type.
    TypeRef(Box<Type>),
}

/// Digits of an integer literal: exact, as 64-bit limbs, least
/// significant first (no trailing zero limbs; zero is empty).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BigValue(pub Vec<u64>);

impl BigValue {
    pub fn from_u128(v: u128) -> Self {
        let mut limbs = vec![v as u64, (v >> 64) as u64];
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
        BigValue(limbs)
    }

    /// The value if it fits in 128 bits.
    pub fn to_u128(&self) -> Option<u128> {
        match self.0.as_slice() {
            [] => Some(0),
            [a] => Some(*a as u128),
            [a, b] => Some(*a as u128 | (*b as u128) << 64),
            _ => None,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Clone, Debug)]
pub struct Arg {
    /// `name = value` arguments.
    pub name: Option<Ident>,
    /// `_` is [`ExprKind::DontCare`].
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `-e`
    Neg,
    /// `+e`
    Plus,
    /// `!e`
    Not,
    /// `~e`
    BitNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Mul,
    Div,
    Mod,
    Add,
    Sub,
    /// `|+|`
    AddSat,
    /// `|-|`
    SubSat,
    Shl,
    Shr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    /// `++`
    Concat,
    And,
    Or,
}

#[derive(Clone, Debug)]
pub struct Type {
    pub kind: TypeKind,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum TypeKind {
    /// `bit<W>` (`signed: false`) or `int<W>` (`signed: true`); the
    /// width may be any constant expression. Plain `bit` is `bit<1>`.
    Bits {
        signed: bool,
        width: Box<Expr>,
    },
    /// `varbit<W>`.
    Varbit(Box<Expr>),
    /// Arbitrary-precision `int`.
    Int,
    Bool,
    Void,
    Error,
    MatchKind,
    String,
    /// `packet_in` and the like, a header/struct/enum/typedef, an extern
    /// with type arguments (`register<bit<32>>`), a type parameter.
    /// `.T` (top-level) is `dot_prefix`.
    Named {
        name: Ident,
        args: Vec<Type>,
        dot_prefix: bool,
    },
    /// `T[size]` — a header stack.
    Stack {
        elem: Box<Type>,
        size: Box<Expr>,
    },
    /// `tuple<A, B>`.
    Tuple(Vec<Type>),
    /// `_` as a type argument.
    DontCare,
}

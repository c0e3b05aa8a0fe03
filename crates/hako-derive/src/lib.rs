//! Derive macro for hako's `ShmSafe` marker trait.
//!
//! `ShmSafe` marks types that may be placed in a shared-memory segment and
//! read by a different process. Such a type must have a layout that both
//! processes agree on, and it must not own or point at anything outside the
//! segment: a pointer is meaningless in another address space, and a value
//! that needs dropping would be dropped by whichever process happened to
//! release it last.
//!
//! This crate is not meant to be used directly. The `hako` crate re-exports
//! the macro next to the trait, so `#[derive(hako::ShmSafe)]` (or
//! `use hako::ShmSafe;` followed by `#[derive(ShmSafe)]`) is all a user needs.
//! See [`ShmSafe`](macro@ShmSafe) for what the derive checks.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Field, Fields, LitStr};

/// Derives `hako::ShmSafe` for a struct.
///
/// The derive refuses to compile unless all of the following hold:
///
/// * The item is a struct (named, tuple or unit). Enums are rejected because
///   a value read from shared memory could carry a discriminant that no
///   variant uses; store an integer field in a struct instead. Unions are
///   rejected because the derive cannot know which field is meant to be valid.
/// * The struct has `#[repr(C)]` or `#[repr(transparent)]`, optionally
///   combined with modifiers such as `align(N)` or `packed`. The default Rust
///   layout may differ between two builds, so two processes could disagree on
///   where each field lives.
/// * Every field type implements `ShmSafe` itself. Each field type becomes a
///   `FieldType: ::hako::ShmSafe` bound on the generated impl, so fields such
///   as `Vec<u8>`, `String`, `Box<T>` or `&T` are reported as errors at the
///   field.
/// * The struct does not implement `Drop`, and, for non-generic structs,
///   `core::mem::needs_drop` is false (checked at compile time).
///
/// Fields of types with bit patterns that are not values (`bool`, `char`,
/// and arrays, `FixedVec`s and structs holding them) are allowed: the
/// derived impl then checks each such field at its offset when a sample is
/// received (`ShmSafe::CHECKED`, `ShmSafe::is_valid`), so a `bool` other
/// than 0 or 1 written by a foreign or broken publisher is an error, not a
/// value. A struct without such fields is never checked.
///
/// # Attributes
///
/// The type's name, which the service compares when a peer connects, is its
/// full path where it is declared, for example `"my_crate::telemetry::Frame"`
/// (`ShmSafe::TYPE_NAME`), with the names of its generic arguments for a
/// generic struct (`"my_crate::Slot<u32>"`, from `ShmSafe::type_name`): two
/// structs of the same bare name in different modules, or two
/// instantiations of one generic struct, never pass each other's check.
/// `#[hako(type_name = "...")]` on the struct sets the base name instead
/// (generic arguments are still appended), for a type that moves between
/// modules or must match a name a C or Python program gives. No other keys
/// are accepted, and `#[hako]` is not allowed on fields.
///
/// Generic arguments are named by `core::any::type_name`, whose spelling
/// Rust does not promise to keep from one compiler version to the next:
/// processes that share a generic payload type should be built with the
/// same Rust (or share a non-generic wrapper with a `type_name`).
///
/// # Example
///
/// ```ignore
/// use hako::ShmSafe;
///
/// #[derive(Clone, Copy, ShmSafe)]
/// #[repr(C)]
/// #[hako(type_name = "telemetry::Frame")]
/// struct Frame {
///     seq: u64,
///     samples: [f32; 16],
/// }
/// ```
#[proc_macro_derive(ShmSafe, attributes(hako))]
pub fn derive_shm_safe(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    let input = syn::parse_macro_input!(input as DeriveInput);
    expand(input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Produces the `ShmSafe` impl and its compile-time checks for `input`.
fn expand(input: DeriveInput) -> syn::Result<TokenStream> {
    let fields = struct_fields(&input)?;

    // Report every problem with the declaration at once rather than one per
    // compile.
    let mut errors: Option<syn::Error> = None;
    let mut record = |err: syn::Error| match &mut errors {
        Some(all) => all.combine(err),
        None => errors = Some(err),
    };
    if let Err(err) = require_fixed_layout(&input) {
        record(err);
    }
    let options = Options::from_attrs(&input.attrs).unwrap_or_else(|err| {
        record(err);
        Options::default()
    });
    for field in fields {
        if let Err(err) = reject_field_attrs(field) {
            record(err);
        }
    }
    if let Some(err) = errors {
        return Err(err);
    }

    let ident = &input.ident;
    let bare = ident.unraw().to_string();
    let type_name = match options.type_name {
        Some(name) => quote!(#name),
        None => quote!(::core::concat!(::core::module_path!(), "::", #bare)),
    };
    // A generic struct's full name names its arguments: types by their Rust
    // names, constants by their values.
    let generic_names: Vec<TokenStream> = input
        .generics
        .params
        .iter()
        .filter_map(|p| match p {
            syn::GenericParam::Type(t) => {
                let t = &t.ident;
                Some(quote!(::std::string::String::from(::core::any::type_name::<#t>())))
            }
            syn::GenericParam::Const(c) => {
                let c = &c.ident;
                Some(quote!(::std::string::ToString::to_string(&#c)))
            }
            syn::GenericParam::Lifetime(_) => None,
        })
        .collect();
    let full_name = (!generic_names.is_empty()).then(|| {
        quote! {
            fn type_name() -> ::std::string::String {
                let args: ::std::vec::Vec<::std::string::String> = ::std::vec![#(#generic_names),*];
                ::std::format!("{}<{}>", Self::TYPE_NAME, args.join(", "))
            }
        }
    });

    // A struct has invalid bit patterns when a field's type has (`bool`,
    // `char`, ...): then a received value is checked field by field, at
    // each field's offset. Otherwise the trait's defaults (no check) stay.
    let field_types: Vec<&syn::Type> = fields.iter().map(|f| &f.ty).collect();
    let members: Vec<syn::Member> = fields.members().collect();
    let checked = (!fields.is_empty()).then(|| {
        quote! {
            const CHECKED: bool = false #(|| <#field_types as ::hako::ShmSafe>::CHECKED)*;
            unsafe fn is_valid(p: *const u8) -> bool {
                true #(&& (!<#field_types as ::hako::ShmSafe>::CHECKED
                    // SAFETY: the field lies inside the value, whose bytes
                    // the caller promises readable.
                    || unsafe {
                        <#field_types as ::hako::ShmSafe>::is_valid(
                            p.add(::core::mem::offset_of!(Self, #members)),
                        )
                    }))*
            }
        }
    });

    // The impl gets the struct's own bounds plus one bound per field type.
    let mut impl_generics = input.generics.clone();
    let bounds = impl_generics.make_where_clause();
    for field in fields {
        let ty = &field.ty;
        bounds
            .predicates
            .push(syn::parse_quote_spanned!(ty.span()=> #ty: ::hako::ShmSafe));
    }
    let (impl_params, type_args, bounded_where) = impl_generics.split_for_impl();
    let (_, _, own_where) = input.generics.split_for_impl();

    // A non-generic type can be named in a free constant, so its drop glue
    // can be checked directly. For generic types the field bounds already
    // rule out drop glue coming from the fields.
    let needs_drop_check = input.generics.params.is_empty().then(|| {
        let message = format!(
            "`{}` must not need dropping to be ShmSafe: a value in shared memory has no single owner to drop it",
            ident.unraw()
        );
        quote! {
            const _: () = ::core::assert!(!::core::mem::needs_drop::<#ident>(), #message);
        }
    });

    Ok(quote! {
        #[automatically_derived]
        unsafe impl #impl_params ::hako::ShmSafe for #ident #type_args #bounded_where {
            const TYPE_NAME: &'static str = #type_name;
            #full_name
            #checked
        }

        // A `Drop` impl on the struct itself would make these two impls
        // overlap, which the compiler reports as a conflict. This also works
        // for generic structs, where `needs_drop` cannot be asked.
        const _: () = {
            trait HakoShmSafeMustNotImplDrop {}
            #[allow(drop_bounds)]
            impl<T: ::core::ops::Drop + ?::core::marker::Sized> HakoShmSafeMustNotImplDrop for T {}
            impl #impl_params HakoShmSafeMustNotImplDrop for #ident #type_args #own_where {}
        };

        #needs_drop_check
    })
}

/// Returns the fields of a struct, or an error for enums and unions.
fn struct_fields(input: &DeriveInput) -> syn::Result<&Fields> {
    match &input.data {
        Data::Struct(data) => Ok(&data.fields),
        Data::Enum(data) => Err(syn::Error::new(
            data.enum_token.span,
            "ShmSafe cannot be derived for enums: a value read from shared memory may carry \
             a discriminant that matches no variant, which is undefined behaviour; \
             use a #[repr(C)] struct with an integer field and convert it when reading",
        )),
        Data::Union(data) => Err(syn::Error::new(
            data.union_token.span,
            "ShmSafe cannot be derived for unions: the derive cannot tell which field holds \
             a valid value; use a #[repr(C)] struct instead",
        )),
    }
}

/// Checks that the type's `#[repr]` fixes its layout.
fn require_fixed_layout(input: &DeriveInput) -> syn::Result<()> {
    if has_fixed_layout(&input.attrs)? {
        Ok(())
    } else {
        Err(syn::Error::new(
            input.ident.span(),
            "ShmSafe requires #[repr(C)] or #[repr(transparent)]: the default Rust layout \
             is unspecified and may differ between builds, so two processes could disagree \
             on where each field lives",
        ))
    }
}

/// Whether the `#[repr(...)]` attributes include `C` or `transparent`.
///
/// Other entries such as `align(8)` or `packed` are allowed alongside and
/// otherwise ignored.
fn has_fixed_layout(attrs: &[Attribute]) -> syn::Result<bool> {
    let mut fixed = false;
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("repr")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("C") || meta.path.is_ident("transparent") {
                fixed = true;
            }
            // Skip arguments such as the `8` in `align(8)`; they are not
            // nested metas, so they have to be consumed by hand.
            if meta.input.peek(syn::token::Paren) {
                let args;
                syn::parenthesized!(args in meta.input);
                args.parse::<TokenStream>()?;
            }
            Ok(())
        })?;
    }
    Ok(fixed)
}

/// Settings taken from `#[hako(...)]` on the type.
#[derive(Default)]
struct Options {
    /// Overrides the default `TYPE_NAME`.
    type_name: Option<LitStr>,
}

impl Options {
    fn from_attrs(attrs: &[Attribute]) -> syn::Result<Self> {
        let mut options = Self::default();
        for attr in attrs.iter().filter(|attr| attr.path().is_ident("hako")) {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("type_name") {
                    if options.type_name.is_some() {
                        return Err(meta.error("`type_name` is set more than once"));
                    }
                    let name: LitStr = meta.value()?.parse()?;
                    if name.value().is_empty() {
                        return Err(syn::Error::new(
                            name.span(),
                            "`type_name` must not be empty",
                        ));
                    }
                    options.type_name = Some(name);
                    Ok(())
                } else {
                    let key = meta.path.to_token_stream().to_string().replace(' ', "");
                    Err(meta.error(format!(
                        "unknown hako attribute `{key}`; the only supported key is `type_name`"
                    )))
                }
            })?;
        }
        Ok(options)
    }
}

/// `#[hako(...)]` has no meaning on fields, so reject it rather than ignore it.
fn reject_field_attrs(field: &Field) -> syn::Result<()> {
    match field.attrs.iter().find(|attr| attr.path().is_ident("hako")) {
        Some(attr) => Err(syn::Error::new_spanned(
            attr,
            "#[hako(...)] is only supported on the type, not on fields",
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn expand_ok(input: DeriveInput) -> String {
        match expand(input) {
            Ok(tokens) => tokens.to_string(),
            Err(err) => panic!("expected expansion to succeed, got: {err}"),
        }
    }

    fn expand_err(input: DeriveInput) -> String {
        match expand(input) {
            Ok(tokens) => panic!("expected an error, got: {tokens}"),
            Err(err) => err
                .into_iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// Token strings use spaced punctuation; compare on a whitespace-free form.
    fn squash(s: &str) -> String {
        s.chars().filter(|c| !c.is_whitespace()).collect()
    }

    #[test]
    fn accepts_repr_c_named_struct() {
        let out = expand_ok(parse_quote! {
            #[repr(C)]
            struct Frame {
                seq: u64,
                data: [u8; 32],
            }
        });
        let out = squash(&out);
        assert!(out.contains("unsafeimpl::hako::ShmSafeforFrame"), "{out}");
        // Its full path: the module it is declared in, then its name.
        assert!(
            out.contains(
                "constTYPE_NAME:&'staticstr=::core::concat!(::core::module_path!(),\"::\",\"Frame\");"
            ),
            "{out}"
        );
        assert!(!out.contains("fntype_name"), "not generic: {out}");
        assert!(out.contains("::core::mem::needs_drop::<Frame>()"), "{out}");
        assert!(out.contains("HakoShmSafeMustNotImplDropforFrame"), "{out}");
    }

    #[test]
    fn accepts_tuple_and_unit_structs() {
        let tuple = squash(&expand_ok(parse_quote! {
            #[repr(transparent)]
            struct Seq(u64);
        }));
        assert!(tuple.contains("u64:::hako::ShmSafe"), "{tuple}");

        let unit = squash(&expand_ok(parse_quote! {
            #[repr(C)]
            struct Marker;
        }));
        assert!(unit.contains("\"Marker\""), "{unit}");
    }

    #[test]
    fn accepts_repr_combinations() {
        expand_ok(parse_quote! {
            #[repr(C, align(64))]
            struct Padded { x: u32 }
        });
        expand_ok(parse_quote! {
            #[repr(C, packed)]
            struct Packed { x: u8, y: u32 }
        });
        expand_ok(parse_quote! {
            #[repr(align(8))]
            #[repr(C)]
            struct Split { x: u32 }
        });
        expand_ok(parse_quote! {
            #[repr(packed(2), C)]
            struct PackedFirst { x: u32 }
        });
    }

    #[test]
    fn rejects_missing_or_unfixed_repr() {
        let err = expand_err(parse_quote! {
            struct Frame { seq: u64 }
        });
        assert!(err.contains("#[repr(C)]"), "{err}");

        let err = expand_err(parse_quote! {
            #[repr(align(8))]
            struct Frame { seq: u64 }
        });
        assert!(err.contains("#[repr(C)]"), "{err}");

        let err = expand_err(parse_quote! {
            #[repr(Rust)]
            struct Frame { seq: u64 }
        });
        assert!(err.contains("#[repr(C)]"), "{err}");
    }

    #[test]
    fn rejects_enum_and_union() {
        let err = expand_err(parse_quote! {
            #[repr(u8)]
            enum State { Idle, Busy }
        });
        assert!(err.contains("cannot be derived for enums"), "{err}");

        let err = expand_err(parse_quote! {
            #[repr(C)]
            union Bits { a: u32, b: f32 }
        });
        assert!(err.contains("cannot be derived for unions"), "{err}");
    }

    #[test]
    fn honours_type_name_attribute() {
        let out = squash(&expand_ok(parse_quote! {
            #[repr(C)]
            #[hako(type_name = "my::Frame")]
            struct Frame { seq: u64 }
        }));
        assert!(out.contains("=\"my::Frame\";"), "{out}");
        assert!(!out.contains("=\"Frame\";"), "{out}");
    }

    #[test]
    fn default_name_drops_raw_prefix() {
        let out = squash(&expand_ok(parse_quote! {
            #[repr(C)]
            struct r#Type { x: u8 }
        }));
        assert!(out.contains("\"::\",\"Type\");"), "{out}");
    }

    #[test]
    fn a_generic_struct_is_named_with_its_arguments() {
        let out = squash(&expand_ok(parse_quote! {
            #[repr(C)]
            struct Slot<T, const N: usize> { x: [T; N] }
        }));
        assert!(
            out.contains("fntype_name()->::std::string::String"),
            "{out}"
        );
        assert!(out.contains("::core::any::type_name::<T>()"), "{out}");
        assert!(
            out.contains("::std::string::ToString::to_string(&N)"),
            "{out}"
        );
    }

    #[test]
    fn rejects_bad_hako_attributes() {
        let err = expand_err(parse_quote! {
            #[repr(C)]
            #[hako(name = "Frame")]
            struct Frame { seq: u64 }
        });
        assert!(err.contains("unknown hako attribute `name`"), "{err}");

        let err = expand_err(parse_quote! {
            #[repr(C)]
            #[hako(type_name = "a", type_name = "b")]
            struct Frame { seq: u64 }
        });
        assert!(err.contains("more than once"), "{err}");

        let err = expand_err(parse_quote! {
            #[repr(C)]
            #[hako(type_name = "")]
            struct Frame { seq: u64 }
        });
        assert!(err.contains("must not be empty"), "{err}");

        let err = expand_err(parse_quote! {
            #[repr(C)]
            #[hako(type_name = 5)]
            struct Frame { seq: u64 }
        });
        assert!(!err.is_empty());

        let err = expand_err(parse_quote! {
            #[repr(C)]
            struct Frame {
                #[hako(type_name = "x")]
                seq: u64,
            }
        });
        assert!(err.contains("not on fields"), "{err}");
    }

    #[test]
    fn reports_all_declaration_errors_together() {
        let err = expand_err(parse_quote! {
            #[hako(bogus)]
            struct Frame { seq: u64 }
        });
        assert!(err.contains("#[repr(C)]"), "{err}");
        assert!(err.contains("unknown hako attribute `bogus`"), "{err}");
    }

    #[test]
    fn bounds_every_field_type() {
        let out = squash(&expand_ok(parse_quote! {
            #[repr(C)]
            struct Mixed {
                a: u32,
                b: [i16; 4],
                c: Inner,
                d: Vec<u8>,
            }
        }));
        for bound in [
            "u32:::hako::ShmSafe",
            "[i16;4]:::hako::ShmSafe",
            "Inner:::hako::ShmSafe",
            "Vec<u8>:::hako::ShmSafe",
        ] {
            assert!(out.contains(bound), "missing `{bound}` in {out}");
        }
    }

    #[test]
    fn generic_struct_keeps_bounds_and_skips_needs_drop() {
        let out = squash(&expand_ok(parse_quote! {
            #[repr(C)]
            struct Slot<T: Copy, const N: usize> where T: Default {
                items: [T; N],
                len: u32,
            }
        }));
        assert!(
            out.contains("unsafeimpl<T:Copy,constN:usize>::hako::ShmSafeforSlot<T,N>"),
            "{out}"
        );
        assert!(
            out.contains("whereT:Default,[T;N]:::hako::ShmSafe,u32:::hako::ShmSafe"),
            "{out}"
        );
        assert!(out.contains("\"Slot\""), "{out}");
        assert!(!out.contains("needs_drop"), "{out}");
        // The Drop guard still applies, with only the struct's own bounds.
        assert!(
            out.contains("HakoShmSafeMustNotImplDropforSlot<T,N>whereT:Default{}"),
            "{out}"
        );
    }
}

// lg/site.cuh: where the user's code took a pointer or called an accessor (lg::site, and LG_SITE, the default
// argument of the debug build's accessors that makes it the caller's file and line through the generated
// files' #line directives: the template's or the .cu's).
//
// Not versioned: lg::site is part of the contract between the debug build and what reports its faults (the
// GPU's lg/fault.cuh, the CPU run's lg/host/sanitizer.h), one plain struct that every version shares. The
// guard is its own, so any number of libraries define it once.
#ifndef LG_SITE_DEFINED
#define LG_SITE_DEFINED
namespace lg {
struct site {
    const char* file;
    int line;
};
}  // namespace lg
#define LG_SITE = lg::site{__builtin_FILE(), __builtin_LINE()}
#endif  // LG_SITE_DEFINED

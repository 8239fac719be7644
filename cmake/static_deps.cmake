# Links what Debian ships as static archives next to the shared libraries (gRPC,
# protobuf, abseil, OpenSSL, c-ares, re2, upb, zlib) into our executables, gRPC without
# its security stack (grpc_unsecure: CRI is served on a unix socket with insecure
# credentials; the streaming server's TLS is Boost.Asio on OpenSSL). Why: resident
# memory. Loaded as ~60 shared libraries, they cost the idle daemon ~7 MB of pages
# (relocations and start-up code of each library, the whole of gRPC's secure stack);
# linked statically only what is used is loaded (docs/benchmarks.md, "Load bench and
# memory"). Included by the top-level CMakeLists.txt after its find_package calls.
option(DOCKERSHIM_STATIC_DEPS "link gRPC, protobuf, abseil, OpenSSL, ... statically" ON)
if(NOT DOCKERSHIM_STATIC_DEPS)
  return()
endif()

# "/usr/lib/x86_64-linux-gnu/libfoo.so.1.2" -> ".../libfoo.a", if that exists.
function(_dockershim_static_of path out)
  string(REGEX REPLACE "\\.so(\\.[0-9]+)*$" ".a" archive "${path}")
  if(NOT archive STREQUAL path AND EXISTS "${archive}")
    set(${out} "${archive}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

function(_dockershim_use_static target)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    return()
  endif()
  foreach(property IMPORTED_LOCATION IMPORTED_LOCATION_NONE IMPORTED_LOCATION_RELEASE
                   IMPORTED_LOCATION_RELWITHDEBINFO IMPORTED_LOCATION_DEBUG IMPORTED_LOCATION_NOCONFIG)
    get_target_property(location ${target} ${property})
    if(location)
      _dockershim_static_of("${location}" archive)
      if(archive)
        set_target_properties(${target} PROPERTIES ${property} "${archive}" IMPORTED_SONAME "")
      endif()
    endif()
  endforeach()
endfunction()

get_property(_imported DIRECTORY PROPERTY IMPORTED_TARGETS)
foreach(target IN LISTS _imported)
  _dockershim_use_static(${target})
endforeach()
# grpc and grpc++ are the unsecure builds (same API but the secure credentials).
foreach(lib grpc grpc++)
  get_target_property(unsecure gRPC::${lib}_unsecure IMPORTED_LOCATION_NONE)
  if(NOT unsecure)
    get_target_property(unsecure gRPC::${lib}_unsecure IMPORTED_LOCATION_RELEASE)
  endif()
  _dockershim_static_of("${unsecure}" archive)
  if(archive)
    foreach(property IMPORTED_LOCATION_NONE IMPORTED_LOCATION_RELEASE)
      get_target_property(location gRPC::${lib} ${property})
      if(location)
        set_target_properties(gRPC::${lib} PROPERTIES ${property} "${archive}")
      endif()
    endforeach()
  endif()
endforeach()
# gRPC names re2 by its bare library name.
if(TARGET re2::re2 AND EXISTS "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/libre2.a")
  set_target_properties(re2::re2 PROPERTIES INTERFACE_LINK_LIBRARIES "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/libre2.a")
endif()

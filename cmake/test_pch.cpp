// The translation unit that builds test_pch.hpp's precompiled header.

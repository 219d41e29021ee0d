// The vectorcall subclass of the Python Operator class (`op(x)` with no Python frame).
// Part of opsdk's pybind11 entry point (csrc/entry.cpp includes it once).
#pragma once

#include <pybind11/pybind11.h>
#include <structmember.h>

namespace py = pybind11;

namespace {

// `op(x)` with no Python frame and no argument tuple or keyword dict on the way to the
// kernel. CPython calls an instance of a Python class through its type's tp_call, which
// packs the arguments into a tuple and a dict first; only types with a vectorcall slot
// receive them as a C array. So opsdk.load() makes its operators instances of a subclass
// of the Python Operator class, created here from a type spec, whose instances carry a
// vectorcall function right after the base class's fields. It forwards to the instance's
// `_call` (the fast caller above, or the checked Python path). The class is created once
// per process (Python caches it) and works with any operator module's `_call`.
PyObject* forward_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  static PyObject* name = PyUnicode_InternFromString("_call");
  PyObject* target = PyObject_GetAttr(self, name);
  if (!target) return nullptr;
  PyObject* result = PyObject_Vectorcall(target, args, nargsf, kwnames);
  Py_DECREF(target);
  return result;
}

// tp_call (tuple and dict), used until enable_vectorcall has set the instance's slot.
PyObject* forward_tp_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  static PyObject* name = PyUnicode_InternFromString("_call");
  PyObject* target = PyObject_GetAttr(self, name);
  if (!target) return nullptr;
  PyObject* result = PyObject_Call(target, args, kwargs);
  Py_DECREF(target);
  return result;
}

py::object vectorcall_subclass(const py::type& base) {
  auto* b = reinterpret_cast<PyTypeObject*>(base.ptr());
  static PyMemberDef members[] = {
      {"__vectorcalloffset__", T_PYSSIZET, 0, READONLY, nullptr}, {nullptr, 0, 0, 0, nullptr}};
  members[0].offset = b->tp_basicsize;
  static PyType_Slot slots[] = {{Py_tp_call, reinterpret_cast<void*>(&forward_tp_call)},
                                {Py_tp_members, members},
                                {Py_tp_doc, const_cast<char*>("an opsdk operator (vectorcall)")},
                                {0, nullptr}};
  static PyType_Spec spec = {"opsdk.runtime.cpu.Operator", 0, 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL, slots};
  spec.basicsize = static_cast<int>(b->tp_basicsize + sizeof(vectorcallfunc));
  py::tuple bases = py::make_tuple(base);
  PyObject* t = PyType_FromSpecWithBases(&spec, bases.ptr());
  if (!t) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(t);
}

void enable_vectorcall(const py::object& op) {
  auto* type = Py_TYPE(op.ptr());
  const bool ours = (type->tp_flags & Py_TPFLAGS_HAVE_VECTORCALL) && type->tp_base &&
                    type->tp_vectorcall_offset == type->tp_base->tp_basicsize;
  if (!ours)  // made by vectorcall_subclass (of this or another operator module)
    throw py::type_error("enable_vectorcall: not an instance of the vectorcall subclass");
  auto** slot = reinterpret_cast<vectorcallfunc*>(reinterpret_cast<char*>(op.ptr()) +
                                                  type->tp_vectorcall_offset);
  *slot = &forward_call;
}

}  // namespace

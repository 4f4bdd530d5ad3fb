// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "./IERC20.sol";

/// @title ERC20Core
/// @notice Balances, allowances, transfers and supply of an ERC-20, without metadata strings, so tokens with
///         unusual name()/symbol() (bytes32, reverting) can share it.
/// @dev An allowance of type(uint256).max is treated as unlimited and never decreased (common convention,
///      saves an SSTORE per DEX swap in scripts).
abstract contract ERC20Core is IERC20 {
    uint8 private immutable _decimals;
    uint256 private _totalSupply;
    mapping(address => uint256) private _balances;
    mapping(address => mapping(address => uint256)) private _allowances;

    error InsufficientBalance(address account, uint256 balance, uint256 needed);
    error InsufficientAllowance(address spender, uint256 allowance, uint256 needed);
    error InvalidReceiver(address receiver);

    constructor(uint8 decimals_) {
        _decimals = decimals_;
    }

    function decimals() public view returns (uint8) {
        return _decimals;
    }

    // Explicit getters rather than public mappings so the ABI carries the parameter names.
    function totalSupply() public view returns (uint256) {
        return _totalSupply;
    }

    function balanceOf(address account) public view returns (uint256) {
        return _balances[account];
    }

    function allowance(address owner, address spender) public view returns (uint256) {
        return _allowances[owner][spender];
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _transfer(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        _allowances[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = _allowances[from][msg.sender];
        if (allowed != type(uint256).max) {
            if (allowed < value) revert InsufficientAllowance(msg.sender, allowed, value);
            unchecked {
                _allowances[from][msg.sender] = allowed - value;
            }
        }
        _transfer(from, to, value);
        return true;
    }

    /// @dev Transfers to the zero address are refused: destroying tokens goes through _burn so totalSupply
    ///      stays equal to the sum of balances.
    function _transfer(address from, address to, uint256 value) internal {
        if (to == address(0)) revert InvalidReceiver(to);
        uint256 balance = _balances[from];
        if (balance < value) revert InsufficientBalance(from, balance, value);
        unchecked {
            _balances[from] = balance - value;
            _balances[to] += value; // cannot overflow: bounded by _totalSupply
        }
        emit Transfer(from, to, value);
    }

    function _mint(address to, uint256 value) internal {
        if (to == address(0)) revert InvalidReceiver(to);
        _totalSupply += value;
        unchecked {
            _balances[to] += value;
        }
        emit Transfer(address(0), to, value);
    }

    function _burn(address from, uint256 value) internal {
        uint256 balance = _balances[from];
        if (balance < value) revert InsufficientBalance(from, balance, value);
        unchecked {
            _balances[from] = balance - value;
            _totalSupply -= value;
        }
        emit Transfer(from, address(0), value);
    }
}
